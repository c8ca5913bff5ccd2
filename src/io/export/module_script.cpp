// Module kinds as TorchScript expressions (eval-mode forward), one emitter
// per PyTorch module type.

#include "module_script.h"

#include "qfx/ir/kernel_workarounds.h"
#include "qfx/ir/module_registry.h"
#include "qfx/ir/namespace.h"
#include "qfx/ir/python_literals.h"
#include "qfx/nn/activation.h"
#include "qfx/nn/attention.h"
#include "qfx/nn/transformer.h"
#include "qfx/nn/fusion.h"
#include "qfx/nn/intrinsic.h"
#include "qfx/nn/opaque_modules.h"
#include "qfx/nn/qat.h"
#include "qfx/nn/quantized.h"
#include "qfx/nn/quantizable_lstm.h"
#include "qfx/nn/quantized_rnn.h"
#include "qfx/nn/reference.h"
#include "qfx/quant/fake_quantize.h"
#include "qfx/quant/observer_base.h"
#include "qfx/quant/qtypes.h"

#include <torch/csrc/jit/api/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/functional/instancenorm.h>  // before the module, which does not include it
#include <torch/nn/modules/instancenorm.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/modules/rnn.h>

#include <functional>
#include <map>

namespace qfx::io::detail {
namespace {

using Inputs = std::vector<std::string>;

std::string ints(c10::IntArrayRef v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

std::string num(double v) { return ir::python_float_repr(v); }
std::string flag(bool v) { return v ? "True" : "False"; }

template <typename Impl>
const Impl& as(const torch::nn::Module& m) {
  return dynamic_cast<const Impl&>(m);
}

template <size_t D, typename Options>
std::string conv(const Emit& e, const Options& o, const std::string& weight, const std::string& bias_override,
                 bool transposed) {
  std::string d = std::to_string(D) + "d";
  std::string bias = bias_override.empty() ? e.param("bias") : bias_override;
  if (transposed) {
    const auto& padding = c10::get<torch::ExpandingArray<D>>(o.padding());
    return "torch.conv_transpose" + d + "(" + e.x() + ", " + weight + ", " + bias + ", " + ints(*o.stride()) + ", " +
           ints(*padding) + ", " + ints(*o.output_padding()) + ", " + std::to_string(o.groups()) + ", " +
           ints(*o.dilation()) + ")";
  }
  std::string input = e.x();
  std::string padding;
  if (const auto* p = c10::get_if<torch::ExpandingArray<D>>(&o.padding())) {
    padding = ints(**p);
    std::string mode = ir::snake_case(torch::enumtype::get_enum_name(o.padding_mode()).substr(1));
    if (mode != "zeros") {
      std::vector<int64_t> pad;
      for (size_t i = D; i-- > 0;) pad.insert(pad.end(), {(**p)[i], (**p)[i]});
      input = "torch.pad(" + input + ", " + ints(pad) + ", \"" + mode + "\")";
      padding = ints(std::vector<int64_t>(D, 0));
    }
  } else {
    padding = c10::get_if<torch::enumtype::kSame>(&o.padding()) ? "\"same\"" : "\"valid\"";
  }
  return "torch.conv" + d + "(" + input + ", " + weight + ", " + bias + ", " + ints(*o.stride()) + ", " + padding +
         ", " + ints(*o.dilation()) + ", " + std::to_string(o.groups()) + ")";
}

/// F.embedding_bag: 2-D input without offsets is flattened with one bag per row.
std::string embedding_bag(const Emit& e, const std::string& weight) {
  const auto& o = as<torch::nn::EmbeddingBagImpl>(e.m).options;
  int64_t mode = c10::get_if<torch::enumtype::kSum>(&o.mode())    ? 0
                 : c10::get_if<torch::enumtype::kMean>(&o.mode()) ? 1
                                                                  : 2;
  bool has_offsets = e.in.size() > 1 && e.in[1] != "None";
  std::string indices = has_offsets ? e.x() : "torch.flatten(" + e.x() + ")";
  std::string offsets = has_offsets ? e.in[1] : "torch.arange(0, " + e.x() + ".numel(), " + e.x() + ".size(1))";
  std::string weights = e.in.size() > 2 ? e.in[2] : "None";
  return "torch.embedding_bag(" + weight + ", " + indices + ", " + offsets + ", False, " + std::to_string(mode) +
         ", False, " + weights + ", " + flag(o.include_last_offset()) + ", " +
         (o.padding_idx() ? std::to_string(*o.padding_idx()) : std::string("None")) + ")[0]";
}

/// The float computation of a Linear, ConvNd, ConvTransposeNd or Embedding
/// with the weight `weight_of()` names; empty for other modules.
std::string weighted(const Emit& e, const std::function<std::string()>& weight_of, const std::string& bias = "") {
  using namespace torch::nn;
  const torch::nn::Module& m = e.m;
  bool is_weighted = dynamic_cast<const LinearImpl*>(&m) || dynamic_cast<const Conv1dImpl*>(&m) ||
                     dynamic_cast<const Conv2dImpl*>(&m) || dynamic_cast<const Conv3dImpl*>(&m) ||
                     dynamic_cast<const ConvTranspose1dImpl*>(&m) || dynamic_cast<const ConvTranspose2dImpl*>(&m) ||
                     dynamic_cast<const ConvTranspose3dImpl*>(&m) || dynamic_cast<const EmbeddingImpl*>(&m) ||
                     dynamic_cast<const EmbeddingBagImpl*>(&m);
  if (!is_weighted) return "";
  std::string weight = weight_of();
  if (dynamic_cast<const LinearImpl*>(&m)) {
    return "torch.linear(" + e.x() + ", " + weight + ", " + (bias.empty() ? e.param("bias") : bias) + ")";
  }
  if (auto* c = dynamic_cast<const Conv1dImpl*>(&m)) return conv<1>(e, c->options, weight, bias, false);
  if (auto* c = dynamic_cast<const Conv2dImpl*>(&m)) return conv<2>(e, c->options, weight, bias, false);
  if (auto* c = dynamic_cast<const Conv3dImpl*>(&m)) return conv<3>(e, c->options, weight, bias, false);
  if (auto* c = dynamic_cast<const ConvTranspose1dImpl*>(&m)) return conv<1>(e, c->options, weight, bias, true);
  if (auto* c = dynamic_cast<const ConvTranspose2dImpl*>(&m)) return conv<2>(e, c->options, weight, bias, true);
  if (auto* c = dynamic_cast<const ConvTranspose3dImpl*>(&m)) return conv<3>(e, c->options, weight, bias, true);
  if (auto* emb = dynamic_cast<const EmbeddingImpl*>(&m)) {
    return "torch.embedding(" + weight + ", " + e.x() + ", " + std::to_string(emb->options.padding_idx().value_or(-1)) +
           ", False, False)";
  }
  return embedding_bag(e, weight);
}

template <typename Impl>
std::string batch_norm(const Emit& e) {
  const auto& o = as<Impl>(e.m).options;
  return "torch.batch_norm(" + e.x() + ", " + e.param("weight") + ", " + e.param("bias") + ", " +
         e.param("running_mean") + ", " + e.param("running_var") + ", False, " + num(o.momentum().value_or(0.1)) +
         ", " + num(o.eps()) + ", False)";
}

template <size_t D, typename Impl>
std::string max_pool(const Emit& e) {
  const auto& o = as<Impl>(e.m).options;
  return "torch.max_pool" + std::to_string(D) + "d(" + e.x() + ", " + ints(*o.kernel_size()) + ", " +
         ints(*o.stride()) + ", " + ints(*o.padding()) + ", " + ints(*o.dilation()) + ", " + flag(o.ceil_mode()) + ")";
}

template <size_t D, typename Impl>
std::string avg_pool(const Emit& e) {
  const auto& o = as<Impl>(e.m).options;
  ir::AvgPoolOptions options = ir::avg_pool_options(o);
  bool ceil_mode = ir::avg_pool_needs_ceil_mode(D, options) || o.ceil_mode();  // qnnpack's faulty path avoided
  std::string out = "torch.avg_pool" + std::to_string(D) + "d(" + e.x() + ", " + ints(*o.kernel_size()) + ", " +
                    ints(*o.stride()) + ", " + ints(*o.padding()) + ", " + flag(ceil_mode) + ", " +
                    flag(o.count_include_pad());
  if (D > 1) out += ", " + (o.divisor_override() ? std::to_string(*o.divisor_override()) : std::string("None"));
  out += ")";
  if (ceil_mode == o.ceil_mode()) return out;
  for (size_t i = 0; i < D; ++i) {  // each pooled dimension narrowed to its floor-mode size
    out += ".narrow(" + std::to_string(static_cast<int64_t>(i) - static_cast<int64_t>(D)) + ", 0, " +
           ir::avg_pool_floor_size(D, i, options, e.x()) + ")";
  }
  return out;
}

c10::optional<int64_t> optional_size(int64_t v) { return v; }
c10::optional<int64_t> optional_size(const c10::optional<int64_t>& v) { return v; }

template <size_t D, typename Impl>
std::string adaptive_avg_pool(const Emit& e) {
  const auto& size = as<Impl>(e.m).options.output_size();
  std::vector<int64_t> out;
  for (size_t i = 0; i < D; ++i) {
    c10::optional<int64_t> n = optional_size(size->at(i));
    TORCH_CHECK(n.has_value(), "export: AdaptiveAvgPool with a None output size is not supported");
    out.push_back(*n);
  }
  return "torch.adaptive_avg_pool" + std::to_string(D) + "d(" + e.x() + ", " + ints(out) + ")";
}

template <typename Impl>
std::string instance_norm(const Emit& e) {
  const auto& o = as<Impl>(e.m).options;
  bool stats = o.track_running_stats();
  return "torch.instance_norm(" + e.x() + ", " + e.param("weight") + ", " + e.param("bias") + ", " +
         (stats ? e.param("running_mean") : "None") + ", " + (stats ? e.param("running_var") : "None") + ", " +
         flag(!stats) + ", " + num(o.momentum()) + ", " + num(o.eps()) + ", False)";
}

using Emitter = std::function<std::string(const Emit&)>;

const std::map<std::string, Emitter>& float_emitters() {
  using namespace torch::nn;
  static const std::map<std::string, Emitter> kEmitters = {
      {"torch.nn.ReLU", [](const Emit& e) { return "torch.relu(" + e.x() + ")"; }},
      {"torch.nn.ReLU6", [](const Emit& e) { return "torch.hardtanh(" + e.x() + ", 0.0, 6.0)"; }},
      {"torch.nn.Hardtanh",
       [](const Emit& e) {
         const auto& o = as<HardtanhImpl>(e.m).options;
         return "torch.hardtanh(" + e.x() + ", " + num(o.min_val()) + ", " + num(o.max_val()) + ")";
       }},
      {"torch.nn.Sigmoid", [](const Emit& e) { return "torch.sigmoid(" + e.x() + ")"; }},
      {"torch.nn.Tanh", [](const Emit& e) { return "torch.tanh(" + e.x() + ")"; }},
      {"torch.nn.Hardswish", [](const Emit& e) { return "torch.hardswish(" + e.x() + ")"; }},
      {"torch.nn.Hardsigmoid", [](const Emit& e) { return "torch.hardsigmoid(" + e.x() + ")"; }},
      {"torch.nn.SiLU", [](const Emit& e) { return "torch.silu(" + e.x() + ")"; }},
      {"torch.nn.GELU",
       [](const Emit& e) {
         return "torch.gelu(" + e.x() + ", approximate=\"" + as<GELUImpl>(e.m).options.approximate() + "\")";
       }},
      {"torch.nn.LeakyReLU",
       [](const Emit& e) {
         return "torch.leaky_relu(" + e.x() + ", " + num(as<LeakyReLUImpl>(e.m).options.negative_slope()) + ")";
       }},
      {"torch.nn.ELU",
       [](const Emit& e) { return "torch.elu(" + e.x() + ", " + num(as<ELUImpl>(e.m).options.alpha()) + ")"; }},
      {"torch.nn.PReLU", [](const Emit& e) { return "torch.prelu(" + e.x() + ", " + e.param("weight") + ")"; }},
      {"torch.nn.Softmax",
       [](const Emit& e) {
         return "torch.softmax(" + e.x() + ", " + std::to_string(as<SoftmaxImpl>(e.m).options.dim()) + ")";
       }},
      {"torch.nn.Dropout", [](const Emit& e) { return e.x(); }},
      {"torch.nn.Identity", [](const Emit& e) { return e.x(); }},
      {"torch.nn.Flatten",
       [](const Emit& e) {
         const auto& o = as<FlattenImpl>(e.m).options;
         return "torch.flatten(" + e.x() + ", " + std::to_string(o.start_dim()) + ", " + std::to_string(o.end_dim()) +
                ")";
       }},
      {"torch.nn.BatchNorm1d", batch_norm<BatchNorm1dImpl>},
      {"torch.nn.BatchNorm2d", batch_norm<BatchNorm2dImpl>},
      {"torch.nn.BatchNorm3d", batch_norm<BatchNorm3dImpl>},
      {"torch.nn.InstanceNorm1d", instance_norm<InstanceNorm1dImpl>},
      {"torch.nn.InstanceNorm2d", instance_norm<InstanceNorm2dImpl>},
      {"torch.nn.InstanceNorm3d", instance_norm<InstanceNorm3dImpl>},
      {"torch.nn.LayerNorm",
       [](const Emit& e) {
         const auto& o = as<LayerNormImpl>(e.m).options;
         return "torch.layer_norm(" + e.x() + ", " + ints(o.normalized_shape()) + ", " + e.param("weight") + ", " +
                e.param("bias") + ", " + num(o.eps()) + ")";
       }},
      {"torch.nn.GroupNorm",
       [](const Emit& e) {
         const auto& o = as<GroupNormImpl>(e.m).options;
         return "torch.group_norm(" + e.x() + ", " + std::to_string(o.num_groups()) + ", " + e.param("weight") + ", " +
                e.param("bias") + ", " + num(o.eps()) + ")";
       }},
      {"torch.nn.MaxPool1d", max_pool<1, MaxPool1dImpl>},
      {"torch.nn.MaxPool2d", max_pool<2, MaxPool2dImpl>},
      {"torch.nn.MaxPool3d", max_pool<3, MaxPool3dImpl>},
      {"torch.nn.AvgPool1d", avg_pool<1, AvgPool1dImpl>},
      {"torch.nn.AvgPool2d", avg_pool<2, AvgPool2dImpl>},
      {"torch.nn.AvgPool3d", avg_pool<3, AvgPool3dImpl>},
      {"torch.nn.AdaptiveAvgPool1d", adaptive_avg_pool<1, AdaptiveAvgPool1dImpl>},
      {"torch.nn.AdaptiveAvgPool2d", adaptive_avg_pool<2, AdaptiveAvgPool2dImpl>},
      {"torch.nn.AdaptiveAvgPool3d", adaptive_avg_pool<3, AdaptiveAvgPool3dImpl>},
  };
  return kEmitters;
}

/// A fake-quantize module with its current qparams (what it computes with
/// its observer off); the identity when fake quantization is off.
std::string fake_quantize(const quant::FakeQuantizeBase& fq, const Emit& e, const std::string& type) {
  TORCH_CHECK(type.find("Learnable") == std::string::npos, "export: ", type, " at '", e.path,
              "' has no TorchScript form; convert the model first");
  if (!fq.fake_quant_enabled()) return e.x();
  auto [quant_min, quant_max] = fq.quant_range();
  std::string range = std::to_string(quant_min) + ", " + std::to_string(quant_max) + ")";
  std::string qparams = e.x() + ", " + e.param("scale") + ", " + e.param("zero_point") + ", ";
  if (quant::is_per_channel(fq.qscheme())) {
    return "torch.fake_quantize_per_channel_affine(" + qparams + std::to_string(fq.ch_axis()) + ", " + range;
  }
  return "torch.fake_quantize_per_tensor_affine(" + qparams + range;
}

/// The weight fake quantization of a QAT module applied to `weight`.
std::string weight_fake_quantize(const nn::QatModuleImpl& q, const Emit& e, const std::string& weight) {
  Emit fq{q.weight_fake_quant(), e.path + ".weight_fake_quant", {weight}, e.attrs};
  auto* base = dynamic_cast<const quant::FakeQuantizeBase*>(&q.weight_fake_quant());
  return base != nullptr ? fake_quantize(*base, fq, ir::module_type_name(q.weight_fake_quant())) : weight;
}

std::string bn_expression(const torch::nn::Module& bn, const Emit& e) {
  if (dynamic_cast<const torch::nn::BatchNorm1dImpl*>(&bn)) return batch_norm<torch::nn::BatchNorm1dImpl>(e);
  if (dynamic_cast<const torch::nn::BatchNorm2dImpl*>(&bn)) return batch_norm<torch::nn::BatchNorm2dImpl>(e);
  return batch_norm<torch::nn::BatchNorm3dImpl>(e);
}

/// A QAT module in eval mode: fake-quantized weight on the float op; ConvBn
/// kinds as PyTorch's _forward_approximate with the running statistics.
std::string qat(const nn::QatModuleImpl& q, const Emit& e) {
  Emit inner{*q.weighted(), e.path, e.in, e.attrs};
  std::string out;
  auto bn_module = q.named_children();
  if (!bn_module.contains("bn")) {
    out = weighted(inner, [&] { return weight_fake_quantize(q, e, e.param("weight")); });
  } else {
    const torch::nn::Module& bn = *bn_module["bn"];
    Emit bn_params{bn, e.path + ".bn", {}, e.attrs};
    int64_t dims = q.named_parameters(false)["weight"].dim();
    std::vector<int64_t> weight_shape(dims, 1), bias_shape(dims, 1);
    weight_shape[0] = -1;
    bias_shape[1] = -1;
    std::string factor = "(" + bn_params.param("weight") + " / torch.sqrt(" + bn_params.param("running_var") + " + " +
                         num(nn::batch_norm_state(bn).eps) + "))";
    std::string bias = e.param("bias");
    std::string scaled =
        weight_fake_quantize(q, e, "(" + e.param("weight") + " * " + factor + ".reshape(" + ints(weight_shape) + "))");
    std::string zero_bias = bias != "None"
                                ? "torch.zeros_like(" + bias + ")"
                                : "torch.zeros([" + std::to_string(q.named_parameters(false)["weight"].size(0)) + "])";
    std::string orig = "(" +
                       weighted(
                           inner, [&] { return scaled; }, zero_bias) +
                       " / " + factor + ".reshape(" + ints(bias_shape) + "))";
    if (bias != "None") orig = "(" + orig + " + " + bias + ".reshape(" + ints(bias_shape) + "))";
    out = bn_expression(bn, Emit{bn, e.path + ".bn", {orig}, e.attrs});
  }
  return q.type_name().find("ReLU") != std::string::npos ? "torch.relu(" + out + ")" : out;
}

}  // namespace

torch::jit::Module ScriptAttrs::new_module(const std::string& python_class) const {
  return torch::jit::Module(c10::QualifiedName("__torch__." + python_class), unit_, /*shouldMangle=*/true);
}

std::string ScriptAttrs::add(const std::string& hint, const c10::IValue& value) {
  std::string base;
  for (char c : hint) base += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "_" + base;
  std::string name = base;
  for (int i = 1; !taken_.insert(name).second; ++i) name = base + "_" + std::to_string(i);
  values_.emplace_back(name, value);
  return "self." + name;
}

void ScriptAttrs::add_exact(const std::string& name, const c10::IValue& value) {
  TORCH_CHECK(taken_.insert(name).second, "export: attribute name '", name, "' is used twice");
  values_.emplace_back(name, value);
}

std::string script_literal(const c10::IValue& value) {
  if (value.isNone()) return "None";
  if (value.isBool()) return flag(value.toBool());
  if (value.isInt()) return std::to_string(value.toInt());
  if (value.isDouble()) return num(value.toDouble());
  if (value.isIntList()) return ints(value.toIntVector());
  TORCH_CHECK(false, "export: no TorchScript literal for a ", value.tagKind());
}

namespace {

/// `callee(a, b)`.
std::string call_expression(const std::string& callee, const Inputs& inputs) {
  std::string out = callee + "(";
  for (size_t i = 0; i < inputs.size(); ++i) out += (i ? ", " : "") + inputs[i];
  return out + ")";
}

/// The eval-mode expression of a float torch.nn module.
std::string float_expression(const Emit& e, const std::string& type) {
  std::string out = weighted(e, [&] { return e.param("weight"); });
  if (!out.empty()) return out;
  auto it = float_emitters().find(type);
  TORCH_CHECK(it != float_emitters().end(), "export: no TorchScript form for ", type, " (module '", e.path, "')");
  return it->second(e);
}

/// A float torch.nn module that holds parameters (Linear, Conv2d, BatchNorm2d, ...).
bool is_trainable_float(const torch::nn::Module& module, const std::string& type) {
  return type.rfind("torch.nn.", 0) == 0 && !module.named_parameters(/*recurse=*/false).is_empty();
}

/// `self.<name>` of a submodule of class `__torch__.<type>` that computes the
/// float module with its parameters as parameters (`model.conv1.weight` in
/// Python), so an imported export is a module tree that still trains.
std::string float_submodule(const Emit& e, const std::string& type) {
  Inputs names;
  for (size_t i = 0; i < e.in.size(); ++i) names.push_back(i == 0 ? "input" : "input_" + std::to_string(i));
  ScriptAttrs own(e.attrs.unit());  // the submodule's own attributes
  Emit inner{e.m, "", names, own};
  std::string forward = is_recurrent_type(type) ? recurrent_forward(inner, type)
                        : is_cell_type(type)    ? float_cell_forward(inner)
                                                : "";
  std::string body = forward.empty() ? float_expression(inner, type) : "";
  torch::jit::Module sub = e.attrs.new_module(type);
  mark_eval(sub);
  auto params = e.m.named_parameters(/*recurse=*/false);
  for (const auto& [name, value] : own.values()) {
    bool is_param = params.contains(name);
    // a plain Tensor type: lists of a shaped one are not lists of Tensor
    c10::TypePtr type = value.isTensor() ? c10::TensorType::get() : value.type();
    sub.register_attribute(name, type, value, is_param, value.isTensor() && !is_param);
  }
  if (forward.empty())
    forward = "def forward(self, " + call_expression("", names).substr(1) + ":\n    return " + body + "\n";
  define_forward(sub, forward);
  return e.attrs.add(e.path, sub._ivalue());
}

}  // namespace

std::string module_expression(const torch::nn::Module& module, const std::string& path, const Inputs& inputs,
                              ScriptAttrs& attrs) {
  Emit e{module, path, inputs, attrs};
  std::string type = ir::module_type_name(module);
  if (auto* q = dynamic_cast<const nn::QuantizedModuleImpl*>(&module))
    return quantized_expression(*q, path, inputs, attrs);
  if (auto* fq = dynamic_cast<const quant::FakeQuantizeBase*>(&module)) return fake_quantize(*fq, e, type);
  if (auto* q = dynamic_cast<const nn::QatModuleImpl*>(&module)) return qat(*q, e);
  if (dynamic_cast<const quant::ActivationPostProcess*>(&module) != nullptr)
    return inputs.at(0);  // observers pass values through
  if (auto* script = dynamic_cast<const nn::ScriptModuleImpl*>(&module)) {
    return call_expression(attrs.add(path, script->script()._ivalue()) + ".forward", inputs);
  }
  if (auto* attention = dynamic_cast<const nn::MultiheadAttentionImpl*>(&module)) {
    return call_expression(attention_submodule(*attention, path, attrs) + ".forward", inputs);
  }
  if (dynamic_cast<const nn::TransformerEncoderImpl*>(&module) != nullptr ||
      dynamic_cast<const nn::TransformerEncoderLayerImpl*>(&module) != nullptr) {
    return call_expression(encoder_submodule(module, path, attrs) + ".forward", inputs);
  }
  if (auto* nested = dynamic_cast<const nn::NestedGraphModuleImpl*>(&module)) {
    return call_expression(attrs.add(path, nested_script_module(nested->graph_module(), path, attrs)) + ".forward",
                           inputs);
  }
  if (auto* lstm = dynamic_cast<const nn::QuantizedLSTMImpl*>(&module)) {
    return call_expression(quantized_lstm_submodule(*lstm, path, attrs) + ".forward", inputs);
  }
  if (auto* rnn = dynamic_cast<const nn::DynamicQuantizedRNNImpl*>(&module)) {
    return call_expression(dynamic_rnn_submodule(*rnn, e) + ".forward", inputs);
  }
  if (auto* ref = dynamic_cast<const nn::ReferenceRNNImpl*>(&module)) {  // the float module on its dequantized weights
    Emit dequantized{*ref->dequantized(), path, inputs, attrs};
    return call_expression(float_submodule(dequantized, ref->shape().float_type) + ".forward", inputs);
  }
  if (auto* ref = dynamic_cast<const nn::ReferenceModuleImpl*>(&module)) {
    Emit inner{*ref->float_module(), path, inputs, attrs};
    std::string out =
        weighted(inner, [&] { return attrs.add(path + ".weight_dequantized", ref->weight_dequantized()); });
    if (!out.empty()) return out;
  }
  if (auto* fused = dynamic_cast<const nn::FusedModuleImpl*>(&module)) {
    std::string out = module_expression(*fused->module(0), path + ".0", inputs, attrs);
    if (nn::fused_kind_info(fused->kind()).adds_second_input) out = "torch.add(" + out + ", " + inputs.at(1) + ")";
    for (size_t i = 1; i < fused->modules().size(); ++i) {
      out = module_expression(*fused->module(i), path + "." + std::to_string(i), {out}, attrs);
    }
    return out;
  }
  if (is_trainable_float(module, type)) return call_expression(float_submodule(e, type) + ".forward", inputs);
  return float_expression(e, type);
}

}  // namespace qfx::io::detail
