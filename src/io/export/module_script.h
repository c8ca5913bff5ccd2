#pragma once
// The TorchScript form of each module kind: an expression over the call's
// inputs, with the module's tensors and packed weights as attributes of the
// exported root module.

#include "qfx/ir/graph_module.h"

#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/nn/module.h>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace qfx::nn {
class MultiheadAttentionImpl;
class QuantizedLSTMImpl;
class QuantizedModuleImpl;
class DynamicQuantizedRNNImpl;
}  // namespace qfx::nn

namespace qfx::io::detail {

/// The attributes of the exported module, each named once.
class ScriptAttrs {
 public:
  /// `unit` holds the classes of the export's submodules: one compilation
  /// unit per export, where each class name is made unique (TorchScript
  /// slows down and its memory grows with every unit that defines the same
  /// `__torch__.torch.nn.Conv2d` anew).
  /// `pointwise_as_linear`: TorchScriptOptions::pointwise_convs_as_linear.
  explicit ScriptAttrs(std::shared_ptr<torch::jit::CompilationUnit> unit, bool pointwise_as_linear = true)
      : unit_(std::move(unit)), pointwise_as_linear_(pointwise_as_linear) {}
  bool pointwise_as_linear() const { return pointwise_as_linear_; }
  /// A new module of class `__torch__.<python_class>` in the export's unit.
  torch::jit::Module new_module(const std::string& python_class) const;
  const std::shared_ptr<torch::jit::CompilationUnit>& unit() const { return unit_; }
  /// `self.<name>` for a new attribute holding `value`, named after `hint`
  /// (a module path; dots become underscores).
  std::string add(const std::string& hint, const c10::IValue& value);
  /// An attribute named exactly `name` (a preserved attribute); c10::Error if taken.
  void add_exact(const std::string& name, const c10::IValue& value);
  const std::vector<std::pair<std::string, c10::IValue>>& values() const { return values_; }

 private:
  std::shared_ptr<torch::jit::CompilationUnit> unit_;
  bool pointwise_as_linear_;
  std::vector<std::pair<std::string, c10::IValue>> values_;
  std::set<std::string> taken_{"training"};  // every module has `training`
};

/// One module being written: the module, its path, its printed inputs, and
/// the export's attributes its tensors are registered in.
struct Emit {
  const torch::nn::Module& m;
  const std::string& path;
  const std::vector<std::string>& in;
  ScriptAttrs& attrs;

  const std::string& x() const { return in.at(0); }
  /// `self.<path>_<name>` for a parameter or buffer, or None.
  std::string tensor(const char* name, const at::Tensor& value) const {
    return value.defined() ? attrs.add(hint(name), value) : "None";
  }
  /// The attribute name hint for the module's own `name`: exactly `name` when
  /// the module is exported as its own submodule (empty path).
  std::string hint(const std::string& name) const { return path.empty() ? name : path + "." + name; }
  std::string param(const char* name) const {
    auto params = m.named_parameters(false);  // find() points into these dicts
    auto buffers = m.named_buffers(false);
    const at::Tensor* t = params.find(name);
    if (t == nullptr) t = buffers.find(name);
    return tensor(name, t != nullptr ? *t : at::Tensor());
  }
};

/// The forward source of a float or dynamic recurrent module (LSTM, GRU,
/// RNN) and of a float cell (LSTMCell, GRUCell, RNNCell), as Python's
/// (recurrent_script.cpp).
bool is_recurrent_type(const std::string& type);
bool is_cell_type(const std::string& type);
std::string recurrent_forward(const Emit& e, const std::string& type);
std::string float_cell_forward(const Emit& e);
/// `self.<path>` of a submodule of class `__torch__.torch.ao.nn.quantized.
/// dynamic.<X>` whose forward is nnqd.X's.
std::string dynamic_rnn_submodule(const nn::DynamicQuantizedRNNImpl& q, const Emit& e);

/// The expression that computes `module` (at `path`) on `inputs` (printed
/// arguments); c10::Error naming the module type when it has no TorchScript form.
std::string module_expression(const torch::nn::Module& module, const std::string& path,
                              const std::vector<std::string>& inputs, ScriptAttrs& attrs);

/// The `torch.ops.quantized` call of a quantized module (at `path`) on `inputs`.
std::string quantized_expression(const nn::QuantizedModuleImpl& q, const std::string& path,
                                 const std::vector<std::string>& inputs, ScriptAttrs& attrs);

/// A pointwise convolution written as `quantized::linear` over its channel
/// dimension (nn::pointwise_linear_weight says why): the op, the
/// permutations that move the channels last and back, the linear weight.
struct PointwiseLinear {
  std::string op;  ///< `torch.ops.quantized.linear` or `.linear_relu`
  std::vector<int64_t> channels_last, channels_first;
  c10::IValue weight;
};

/// The linear form of convolution op `conv_op` (`quantized::conv2d`,
/// `torch.ops.quantized.conv1d_relu`, ...) with packed weight `packed`;
/// nullopt unless it is pointwise and the engine onednn.
std::optional<PointwiseLinear> pointwise_linear(const std::string& conv_op, const c10::IValue& packed);

/// `op(input.permute(...), weight, scale, zero_point).permute(...)`.
std::string pointwise_linear_expression(const PointwiseLinear& p, const std::string& input, const std::string& weight,
                                        const std::string& scale, const std::string& zero_point);

/// `self.<name>` of a submodule of class `__torch__.torch.ao.nn.quantized.LSTM`
/// computing `lstm` (its forward takes input and optional (h_0, c_0)).
std::string quantized_lstm_submodule(const nn::QuantizedLSTMImpl& lstm, const std::string& path, ScriptAttrs& attrs);

/// A module of class `__torch__.torch.nn.modules.activation.MultiheadAttention`
/// in the export's unit computing `m` as Python's module does, and `self.<name>`
/// of it as a submodule of the export (attention_script.cpp).
torch::jit::Module attention_script_module(const nn::MultiheadAttentionImpl& m, const ScriptAttrs& attrs);
std::string attention_submodule(const nn::MultiheadAttentionImpl& m, const std::string& path, ScriptAttrs& attrs);

/// `self.<name>` of a submodule of class `__torch__.torch.nn.modules.
/// transformer.TransformerEncoder` (or `...Layer`) computing `m` as
/// Python's module does (encoder_script.cpp).
std::string encoder_submodule(const torch::nn::Module& m, const std::string& path, ScriptAttrs& attrs);

/// `s` with every `from` replaced by `to` (placeholders of forward sources).
void replace_all(std::string& s, const std::string& from, const std::string& to);

/// Registers `value` as parameter `name` of `module`, or an attribute None
/// where it is undefined (as a scripted module holds an absent parameter).
void add_tensor(torch::jit::Module& module, const std::string& name, const at::Tensor& value);

/// The exported TorchScript module of a nested GraphModule (a standalone
/// module at `path`), as a module object to register as a submodule; written
/// as the export of `parent` is.
c10::IValue nested_script_module(const ir::GraphModule& gm, const std::string& path, const ScriptAttrs& parent);

/// Compiles `source` (a `def forward`) into `module`, `torch.*` and
/// `torch.ops.*` resolved; c10::Error with TorchScript's message when rejected.
void define_forward(torch::jit::Module& module, const std::string& source);

/// Gives `module` the `training` attribute every Python module has, False:
/// the exported forward is the eval-mode one.
void mark_eval(torch::jit::Module& module);

/// A value as a TorchScript literal: ints, floats, bools, None, int lists.
std::string script_literal(const c10::IValue& value);

}  // namespace qfx::io::detail
