#pragma once
// The tables of lower-to-native, as PyTorch 1.13's _lower_to_native_backend:
// which reference modules, fused modules, functions and binary ops become
// which quantized modules and ops, and the op lists of the special patterns.

#include "qfx/ir/graph_module.h"

#include <string>
#include <vector>

namespace qfx::passes::detail {

/// A module lowering: a module of `source_type` (whose first part is of
/// `inner_type`, for fused modules) becomes a `quantized_type`.
struct ModuleLowering {
  const char* source_type;
  const char* quantized_type;
  const char* inner_type = nullptr;
};

/// STATIC_LOWER_MODULE_MAP and STATIC_LOWER_FUSED_MODULE_MAP.
const std::vector<ModuleLowering>& static_module_lowerings();
/// DYNAMIC_LOWER_MODULE_MAP and DYNAMIC_LOWER_FUSED_MODULE_MAP.
const std::vector<ModuleLowering>& dynamic_module_lowerings();
/// WEIGHT_ONLY_LOWER_MODULE_MAP.
const std::vector<ModuleLowering>& weight_only_module_lowerings();
/// SPECIAL_PATTERN_LOWER_MODULE_MAP.
const std::vector<ModuleLowering>& special_module_lowerings();

/// The row for `module` (its type and, for fused modules, its first part's
/// type), or nullptr.
const ModuleLowering* find_module_lowering(const std::vector<ModuleLowering>& table, const torch::nn::Module& module);

/// A function lowering: `function` becomes `op`, or `relu_op` when a relu
/// follows (empty: none). For dynamic rows, the activation and weight dtypes.
struct FunctionLowering {
  const char* function;
  const char* op;
  const char* relu_op;
  c10::ScalarType activation = c10::kQUInt8;
  c10::ScalarType weight = c10::kQInt8;
};

/// The row for a call_function `node`'s function, or nullptr.
const FunctionLowering* find_function_lowering(const std::vector<FunctionLowering>& table, const ir::Node& node);

/// STATIC_LOWER_FUNCTIONAL_MAP.
const std::vector<FunctionLowering>& static_function_lowerings();
/// DYNAMIC_LOWER_FUNCTIONAL_MAP, one row per dtype pair.
const std::vector<FunctionLowering>& dynamic_function_lowerings();
/// QBIN_OP_MAPPING and QBIN_RELU_OP_MAPPING.
const std::vector<FunctionLowering>& binary_op_lowerings();
/// One Python parameter after `input`: its name, default (None when
/// `required`), and whether PyTorch's functional passes it positionally.
struct PythonParam {
  const char* name;
  ir::Argument default_value;
  bool positional = false;
};

/// DEFAULT_FLOAT_TO_QUANTIZED_OPERATOR_MAPPINGS: a functional, its quantized
/// op, its Python parameters after `input` as FX records them (keywords with
/// defaults filled), and the keywords the quantized op does not take.
struct DefaultFunctionLowering {
  const char* function;
  const char* op;
  std::vector<PythonParam> params;
  std::vector<std::string> dropped;
};
const std::vector<DefaultFunctionLowering>& default_function_lowerings();

/// The prepack op for a functional linear (by weight dtype) or conv.
std::string prepack_op(const std::string& function, c10::ScalarType weight_dtype);

/// A list of functions, methods and module types (PyTorch's _is_node_in_list).
struct NodeList {
  std::vector<std::string> functions;
  std::vector<std::string> methods;
  std::vector<std::string> modules;
};

/// Which kinds of `node` are in `list`.
struct ListHit {
  bool function = false, method = false, module = false;
  bool any() const { return function || method || module; }
};
ListHit find_in(const NodeList& list, const ir::Node& node, const ir::GraphModule& gm);

/// is_fixed_qparams_node, is_default_node, and all five special lists together.
const NodeList& fixed_qparams_nodes();
const NodeList& default_nodes();
ListHit find_special_pattern(const ir::Node& node, const ir::GraphModule& gm);

/// The canonical name of a call_function target (`torch._C._nn.linear` is
/// `torch.nn.functional.linear`).
std::string function_name(const ir::Node& node);

}  // namespace qfx::passes::detail
