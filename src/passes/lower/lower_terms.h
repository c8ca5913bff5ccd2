#pragma once
// The terms lower-to-native's rule tables are written in: the quantize and
// dequantize ops around a reference op, and the classes of ops PyTorch
// 1.13's lowering maps and lists name (lower_tables.h).

#include "lower_tables.h"

#include "qfx/pattern/pattern.h"

namespace qfx::passes::detail::terms {

using pattern::Term;

/// `input.dequantize()`.
Term dequantize(Term input = Term::any());
/// `torch.quantize_per_tensor(input, scale, zero_point, dtype)`.
Term quantize(Term input);
/// `torch.quantize_per_tensor_dynamic(...)`.
Term quantize_dynamic();
/// A weight's `torch.quantize_per_tensor` or `torch.quantize_per_channel`.
Term quantize_weight();
/// F.relu, torch.relu or nn.ReLU of `input` (_match_static_pattern's relu).
Term relu(Term input);
/// F.relu or nn.ReLU of `input` (_lower_dynamic_weighted_ref_functional's relu).
Term dynamic_relu(Term input);

/// A call_module node whose module has a row in `table`.
Term module_in(const char* description, const std::vector<ModuleLowering>& table);
/// A call_function node whose function has a row in `table`.
Term function_in(const char* description, const std::vector<FunctionLowering>& table);
/// A node in one of PyTorch's special pattern lists (find_special_pattern).
Term special_op();
/// A dequantize node or a value that is not a node (a binary op's operand).
Term dequantized_or_constant();
/// A dequantize node, or a list of them (a special op's first argument, e.g. cat's).
Term dequantized_inputs();
/// `torch.quantize_per_tensor` or `.to(torch.float16)`, the end of a special pattern.
Term quantize_or_to_float16();
/// The string argument "shape".
Term shape_name();

}  // namespace qfx::passes::detail::terms
