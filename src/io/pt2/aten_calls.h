#pragma once
// ATen nodes of an exported program that need more than a row of the ATen ->
// FX table: indexing (slice, select, index -> getitem), upsampling (->
// F.interpolate), functional convolutions (-> F.convNd with every argument),
// dynamic sizes (-> x.size(d)), scaled_dot_product_attention
// (newer than LibTorch 1.13: its math as nodes), and ops with neither a row
// nor a special form (-> torch.ops.aten.<op>). Internal to src/io.

#include "qfx/io/graph_builder.h"

#include <functional>
#include <string>

namespace qfx::io::pt2 {

/// A node's arguments by schema name: the graph argument, and the constant when there is one.
struct NamedArgs {
  std::function<ir::Argument(const std::string& name)> arg;
  std::function<c10::optional<c10::IValue>(const std::string& name)> constant;
  /// The last size of the tensor argument `name` when the program records it as a number.
  std::function<c10::optional<int64_t>(const std::string& name)> last_size;
  /// True when the tensor argument `name` is a bool tensor, as the program records it.
  std::function<bool(const std::string& name)> is_bool;
  /// True when the op's schema has an argument `name`.
  std::function<bool(const std::string& name)> has;
};

/// The FX node of `op` (`aten::slice`, overload `Tensor`) when it has a special form; nullptr otherwise.
ir::Node* call_special(GraphBuilder& b, const std::string& op, const NamedArgs& args);

/// The index of `x[...]` that `op` (aten::slice or aten::select) takes of its `self`.
ir::Argument::Items view_index(GraphBuilder& b, const std::string& op, const NamedArgs& args);

/// True for ops call_special reads without a LibTorch 1.13 schema (their arguments by the program's names).
bool is_newer_op(const std::string& op);

/// `op` as `torch.ops.aten.<name>(...)`, its arguments split as FX splits a call's.
ir::Node* call_torch_op(GraphBuilder& b, const std::string& op, const std::vector<c10::Argument>& schema,
                        const std::vector<OpInput>& inputs);

}  // namespace qfx::io::pt2
