#pragma once
/// \file
/// GraphBuilder: the FX-shaped graph every importer builds. A reader (the
/// TorchScript walker, the `.pt2` reader) says what the model does in ATen's
/// and torch.nn's terms; the builder records it as `torch.fx.symbolic_trace`
/// would have recorded the Python program behind it:
///
/// - an ATen op becomes the node of its row in the ATen -> FX table
///   (`aten::add` -> `operator.add`), with its arguments split as FX splits
///   them (trailing defaults left out, keyword-only ones as kwargs);
/// - a module kept as a leaf becomes one `call_module` node on its path, the
///   module added the first time;
/// - tensors the graph reads become `get_attr` nodes, once per path;
/// - every node records the innermost module being read (ir::NodeScope),
///   which QConfigMapping's `module_name` and `object_type` entries resolve.
///
/// \code
///   qfx::io::GraphBuilder b(*gm, [](const std::string& what) { TORCH_CHECK(false, "import: ", what); });
///   ir::Node* x = b.placeholder("x");
///   b.enter_scope("block", "models.Block");
///   ir::Node* y = b.call_module("block.conv", conv, {x});
///   b.exit_scope();
///   b.output(y);
/// \endcode

#include "qfx/ir/graph_module.h"

#include <ATen/core/function_schema.h>

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace torch::nn {
class Module;
}

namespace qfx::io {

/// One input of an ATen call: its constant when the reader knows it (to
/// compare with the schema's default), and how to make its graph argument
/// (called only when the call uses it; given the schema's type, so that an
/// int reads as a dtype where the schema says ScalarType). Without `value`,
/// the argument is GraphBuilder::constant of `constant`.
struct OpInput {
  c10::optional<c10::IValue> constant;
  std::function<ir::Argument(const c10::TypePtr& type)> value;

  static OpInput of_constant(c10::IValue v) { return {std::move(v), nullptr}; }
  static OpInput of(ir::Argument a) {
    return {c10::nullopt, [a = std::move(a)](const c10::TypePtr&) { return a; }};
  }
};

/// True when `input` is a constant equal to the default of `schema_arg`
/// (FX does not record arguments left at their default).
bool is_default(const c10::Argument& schema_arg, const OpInput& input);

/// `x[outer][inner]` as one index `x[outer]` (FX's `x[a:b, c:d]`) when every
/// part of `outer` is a slice (the dimensions line up); false when the two
/// cannot be merged.
bool merge_index(ir::Argument::Items& outer, const ir::Argument::Items& inner);

/// True for modules FX treats as leaves: defined under `torch.nn` or
/// `torch.ao.nn`, except the containers qfx traces through (traced_through).
bool is_leaf_module(const std::string& python_class);

/// torch.nn modules qfx traces through where FX's QuantizationTracer keeps
/// every torch.nn module but Sequential whole: the transformer containers,
/// whose layers then quantize as eager mode's quantize_dynamic quantizes
/// them (docs/divergences.md).
bool traced_through(const std::string& python_class);

/// The public PyTorch name of a class: `torch.nn.modules.conv.Conv2d` ->
/// `torch.nn.Conv2d`; other names stay as they are.
std::string public_type_name(const std::string& python_class);

class GraphBuilder {
 public:
  /// `fail` raises the importer's error for `what` (adding its location); it must throw.
  using Fail = std::function<void(const std::string& what)>;

  GraphBuilder(ir::GraphModule& gm, Fail fail) : gm_(gm), fail_(std::move(fail)) {}

  ir::GraphModule& module() { return gm_; }

  ir::Node* placeholder(const std::string& name, const std::string& type_annotation);
  ir::Node* output(const ir::Argument& value);
  /// A node of the current scope.
  ir::Node* call(ir::Opcode op, const std::string& target, std::vector<ir::Argument> args, ir::Kwargs kwargs = {});
  ir::Node* getitem(const ir::Argument& of, const ir::Argument& index);
  /// The tensor attribute at `path` (set on the module if absent); one get_attr node per path.
  ir::Node* get_attr(const std::string& path, const at::Tensor& value);
  /// A constant as FX records it: None, numbers, strings, devices, lists and
  /// tuples; ints typed as dtype / layout / memory format by `type`; a tensor
  /// as a new `_tensor_constantN` attribute.
  ir::Argument constant(const c10::IValue& value, const c10::TypePtr& type = nullptr);

  /// The graph argument of `input` for a schema argument of `type`.
  ir::Argument argument(const OpInput& input, const c10::TypePtr& type);

  /// The ATen op `aten` (`aten::add`) as its row of the ATen -> FX table
  /// records it; fails when an argument the row drops is not at its default,
  /// or the arguments fit neither the target nor its fallback.
  ir::Node* call_mapped(const std::string& aten, const std::vector<c10::Argument>& schema,
                        const std::vector<OpInput>& inputs);
  /// A call of `target` (`torch.ops.aten.arange`) with the schema's arguments: positional ones
  /// (trailing defaults left out) as args, keyword-only ones not at their default as kwargs.
  ir::Node* call_op(const std::string& target, const std::vector<c10::Argument>& schema,
                    const std::vector<OpInput>& inputs);
  /// A Python function FX records as one node (`torch.nn.functional.relu`):
  /// its leading tensors positionally, the rest by keyword unless at their default.
  ir::Node* call_torch_function(const std::string& name, const std::vector<c10::Argument>& schema,
                                const std::vector<OpInput>& inputs);

  /// A call of the leaf at `path`, added from `make` the first time (make is
  /// not called after that); the node is in the leaf's own scope, as
  /// QuantizationTracer records it.
  ir::Node* call_module(const std::string& path, const std::function<std::shared_ptr<torch::nn::Module>()>& make,
                        std::vector<ir::Argument> args);
  /// A call of the leaf added at `path`.
  ir::Node* call_module(const std::string& path, std::vector<ir::Argument> args);
  /// True once a leaf was added at `path`.
  bool has_module(const std::string& path) const { return modules_.count(path) != 0; }
  /// Adds `module` at `path` unless a leaf is there already.
  void add_module(const std::string& path, std::shared_ptr<torch::nn::Module> module);

  /// The module at `path` (`torch.nn.Conv2d`, `models.Block`) is being read:
  /// nodes made until exit_scope record it.
  void enter_scope(const std::string& path, const std::string& module_type) { scopes_.push_back({path, module_type}); }
  void exit_scope() { scopes_.pop_back(); }
  const ir::NodeScope& scope() const { return scopes_.back(); }

  [[noreturn]] void fail(const std::string& what) const;

 private:
  /// The FX node of a call: args at `positional`, kwargs at `keyword`.
  ir::Node* call_node(ir::Opcode op, const std::string& target, const std::vector<c10::Argument>& schema,
                      const std::vector<OpInput>& inputs, const std::vector<int>& positional,
                      const std::vector<int>& keyword, bool inplace);
  ir::Node* scoped(ir::Node* node);

  ir::GraphModule& gm_;
  Fail fail_;
  std::unordered_map<std::string, ir::Node*> attribute_nodes_;  // by attribute path
  std::unordered_set<std::string> modules_;                     // leaf paths
  std::vector<ir::NodeScope> scopes_{ir::NodeScope{}};          // innermost last
  int tensor_constants_ = 0;
};

}  // namespace qfx::io
