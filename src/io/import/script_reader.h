#pragma once
// ScriptReader: the Walker handler that reads a TorchScript module into the
// FX-shaped graph of io::GraphBuilder. Leaf modules become call_module nodes
// (built once per path), other modules are walked into, ATen ops become nodes
// through the op table.

#include "walker.h"

#include "qfx/io/graph_builder.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/graph_module.h"

#include <unordered_map>

namespace qfx::io::detail {

class ScriptReader : public Walker::Handler {
 public:
  ScriptReader(ir::GraphModule& gm, const ImportOptions& options)
      : options_(options), walker_(*this), b_(gm, [this](const std::string& what) { walker_.fail(what); }) {}

  /// Imports the forward() of `root` into the graph module.
  void import_forward(const torch::jit::Module& root);

  ImportValue call_module(const ImportValue& module, const std::string& method, std::vector<ImportValue> args) override;
  std::vector<ImportValue> call_op(const torch::jit::Node& node, std::vector<ImportValue> inputs) override;
  ImportValue element(const ImportValue& sequence, int64_t index) override;
  c10::optional<ImportValue> call_function(const std::string& qualified_name, const c10::FunctionSchema& schema,
                                           const std::vector<ImportValue>& args) override;
  void assertion(const ImportValue& condition, const std::string& message) override;

 private:
  ir::Argument to_argument(const ImportValue& value, const c10::TypePtr& type = nullptr);
  ir::Argument static_argument(const c10::IValue& value, const c10::TypePtr& type);
  /// The walked values as inputs of a builder call (converted when used).
  std::vector<OpInput> op_inputs(const std::vector<ImportValue>& values);
  ImportValue custom_op(const torch::jit::Node& node, const std::vector<ImportValue>& inputs);
  ImportValue tensor_index(const std::vector<ImportValue>& inputs);
  /// aten::slice / aten::select: a getitem node, or a view when only written through.
  ImportValue slice_or_select(const torch::jit::Node& node, const std::vector<ImportValue>& inputs);
  /// prim::dtype / prim::device: `x.dtype` / `x.device`; nothing for a view only written through.
  ImportValue tensor_metadata(const torch::jit::Node& node, const std::vector<ImportValue>& inputs);
  /// aten::tensor: `torch.tensor(data, dtype=..., device=...)`, or the data itself when it is the
  /// value of a scripted `x[a:b] = v`.
  ImportValue new_tensor(const torch::jit::Node& node, const std::vector<ImportValue>& inputs);
  ImportValue setitem(const torch::jit::Node& node, const std::vector<ImportValue>& inputs);
  /// True when a slice or select's result is only written through
  /// (`x[a:b][c] = v`): it becomes a view, not a getitem node.
  static bool written_through(const torch::jit::Value& view);
  /// `value[index]` as a view; a view of a view merges the two indexes.
  ImportValue view_of(const ImportValue& value, ir::Argument::Items index);
  ImportValue leaf_call(const ImportValue& module, const std::string& method, std::vector<ImportValue> args);
  /// Input `index` of a fused op as the weight it is (undefined for None).
  at::Tensor tensor_input(const std::vector<ImportValue>& inputs, size_t index, const char* what);
  /// aten::_transformer_encoder_layer_fwd in the layer being walked: the
  /// slow path's calls of its submodules (fast_paths.cpp).
  ImportValue encoder_layer_fast_path(const std::vector<ImportValue>& inputs);
  /// An nn.MultiheadAttention as the leaf nn::MultiheadAttention: scripted,
  /// traced on its slow path or on its fast path (attention_leaf.cpp);
  /// nullptr for a trace it does not recognise.
  std::shared_ptr<torch::nn::Module> attention_leaf(const torch::jit::Module& module, const torch::jit::Graph& forward);
  /// A traced recurrent module's flat outputs as getitems of the FX call
  /// (`order`: which of output, h_n, c_n each is; `single`: one value, not a tuple).
  ImportValue recurrent_result(ir::Node* module, bool lstm, const std::vector<size_t>& order, bool single);
  /// The module ImportOptions keeps whole at this path, or nullptr.
  std::shared_ptr<torch::nn::Module> kept_whole(const ImportValue& module, const std::string& python_class) const;

  const ImportOptions& options_;
  Walker walker_;
  GraphBuilder b_;
  // x[i] = v: later reads of x read the setitem node, which gives x after the write
  std::unordered_map<ir::Node*, ir::Node*> written_;
};

/// True when `value` is the default of `schema_arg` (TorchScript passes a
/// script function's defaults explicitly; FX does not record them).
inline bool is_default(const c10::Argument& schema_arg, const ImportValue& value) {
  return value.is_static() && io::is_default(schema_arg, OpInput::of_constant(value.constant));
}

/// The Python qualified name of a TorchScript class, without `__torch__.` and
/// the JIT's `___torch_mangle_N` parts: `torch.nn.modules.conv.Conv2d`.
std::string python_class_name(const torch::jit::Module& module);

}  // namespace qfx::io::detail
