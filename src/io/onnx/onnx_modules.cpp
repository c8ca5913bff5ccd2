// The ONNX forms of module calls: float torch.nn modules by class, reference
// quantized modules (their float op on the quantized weight), fused modules
// (their modules in turn) and observers (nothing).

#include "onnx_rules.h"

#include "qfx/ir/module_registry.h"
#include "qfx/ir/namespace.h"
#include "qfx/nn/intrinsic.h"
#include "qfx/nn/quantizable_lstm.h"
#include "qfx/nn/quantized_rnn.h"
#include "qfx/nn/reference.h"
#include "qfx/quant/observer_base.h"

#include <ATen/ATen.h>
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

namespace qfx::io::onnx_export {
namespace {

using ModuleRule = std::function<Value(const Context&, const torch::nn::Module&)>;

template <size_t D>
std::vector<int64_t> vec(const std::array<int64_t, D>& a) {
  return {a.begin(), a.end()};
}

/// An affine parameter the module has (LibTorch leaves an empty one without affine).
bool present(const at::Tensor& t) { return t.defined() && t.numel() > 0; }

template <typename Impl>
const Impl& as(const torch::nn::Module& m) {
  return dynamic_cast<const Impl&>(m);
}

/// ConvSpec of a ConvNd or ConvTransposeNd's options.
template <size_t D, typename Options>
ConvSpec conv_spec(const Options& o, bool transposed) {
  ConvSpec spec;
  spec.stride = vec(*o.stride());
  spec.dilation = vec(*o.dilation());
  spec.groups = o.groups();
  spec.transposed = transposed;
  if (const auto* p = c10::get_if<torch::ExpandingArray<D>>(&o.padding())) {
    spec.padding = vec(*(*p));
    std::string mode = ir::snake_case(torch::enumtype::get_enum_name(o.padding_mode()).substr(1));
    spec.padding_mode = mode;
  } else {
    spec.padding_mode = c10::get_if<torch::enumtype::kSame>(&o.padding()) ? "same" : "valid";
  }
  if (transposed) spec.output_padding = vec(*o.output_padding());
  return spec;
}

/// The op of a weighted float module (Linear, ConvNd, ConvTransposeNd,
/// Embedding) with `weight` in place of its own: the float weight, or the
/// quantized one of a reference module.
Value weighted(const Context& c, const torch::nn::Module& m, const at::Tensor& weight) {
  using namespace torch::nn;
  const Value& x = c.arg(0);
  if (auto* l = dynamic_cast<const LinearImpl*>(&m)) return linear(c, x, weight, l->bias);
  if (auto* k = dynamic_cast<const Conv1dImpl*>(&m))
    return conv(c, x, weight, k->bias, conv_spec<1>(k->options, false));
  if (auto* k = dynamic_cast<const Conv2dImpl*>(&m))
    return conv(c, x, weight, k->bias, conv_spec<2>(k->options, false));
  if (auto* k = dynamic_cast<const Conv3dImpl*>(&m))
    return conv(c, x, weight, k->bias, conv_spec<3>(k->options, false));
  if (auto* k = dynamic_cast<const ConvTranspose1dImpl*>(&m)) {
    return conv(c, x, weight, k->bias, conv_spec<1>(k->options, true));
  }
  if (auto* k = dynamic_cast<const ConvTranspose2dImpl*>(&m)) {
    return conv(c, x, weight, k->bias, conv_spec<2>(k->options, true));
  }
  if (auto* k = dynamic_cast<const ConvTranspose3dImpl*>(&m)) {
    return conv(c, x, weight, k->bias, conv_spec<3>(k->options, true));
  }
  if (auto* e = dynamic_cast<const EmbeddingImpl*>(&m)) {
    if (e->options.max_norm()) c.fail("Embedding with max_norm has no ONNX form");
    return embedding(c, x, weight);
  }
  if (auto* bag = dynamic_cast<const EmbeddingBagImpl*>(&m)) {
    const auto& o = bag->options;
    if (o.max_norm() || o.padding_idx()) c.fail("EmbeddingBag with max_norm or padding_idx has no ONNX form here");
    if (c10::get_if<torch::enumtype::kMax>(&o.mode())) c.fail("EmbeddingBag with mode='max' has no ONNX form here");
    return embedding_bag(c, weight, c10::get_if<torch::enumtype::kMean>(&o.mode()) != nullptr, o.include_last_offset());
  }
  c.fail("module of class " + ir::module_type_name(m) + " has no ONNX form");
}

template <typename Impl>
Value weighted_float(const Context& c, const torch::nn::Module& m) {
  return weighted(c, m, as<Impl>(m).weight);
}

template <typename Impl>
Value batch_norm(const Context& c, const torch::nn::Module& m) {
  const auto& bn = as<Impl>(m);
  int64_t n = bn.options.num_features();
  at::Tensor weight = present(bn.weight) ? bn.weight : at::ones({n});
  at::Tensor bias = present(bn.bias) ? bn.bias : at::zeros({n});
  if (!bn.running_mean.defined()) c.fail("BatchNorm without running statistics has no eval-mode ONNX form");
  std::string hint = c.hint();
  return Value::tensor(
      c.g().op("BatchNormalization",
               {c.tensor(c.arg(0)), c.constant(hint + "_weight", weight), c.constant(hint + "_bias", bias),
                c.constant(hint + "_running_mean", bn.running_mean), c.constant(hint + "_running_var", bn.running_var)},
               hint, {{"epsilon", static_cast<float>(bn.options.eps())}}));
}

template <typename Impl>
Value max_pool(const Context& c, const torch::nn::Module& m) {
  const auto& o = as<Impl>(m).options;
  return unary(c, "MaxPool",
               {{"kernel_shape", vec(*o.kernel_size())},
                {"strides", vec(*o.stride())},
                {"pads", both_sides(vec(*o.padding()))},
                {"dilations", vec(*o.dilation())},
                {"ceil_mode", int64_t{o.ceil_mode()}}});
}

template <typename Impl>
Value avg_pool(const Context& c, const torch::nn::Module& m) {
  const auto& o = as<Impl>(m).options;
  return unary(c, "AveragePool",
               {{"kernel_shape", vec(*o.kernel_size())},
                {"strides", vec(*o.stride())},
                {"pads", both_sides(vec(*o.padding()))},
                {"ceil_mode", int64_t{o.ceil_mode()}},
                {"count_include_pad", int64_t{o.count_include_pad()}}});
}

c10::optional<int64_t> optional_size(int64_t v) { return v; }
c10::optional<int64_t> optional_size(const c10::optional<int64_t>& v) { return v; }

template <size_t D, typename Impl>
Value adaptive_pool(const Context& c, const torch::nn::Module& m) {
  const auto& size = as<Impl>(m).options.output_size();
  std::vector<int64_t> out;
  for (size_t i = 0; i < D; ++i) {
    c10::optional<int64_t> n = optional_size(size->at(i));
    if (!n) c.fail("AdaptiveAvgPool with a None output size has no ONNX form");
    out.push_back(*n);
  }
  return adaptive_avg_pool(c, out);
}

Value layer_norm_module(const Context& c, const torch::nn::Module& m) {
  const auto& ln = as<torch::nn::LayerNormImpl>(m);
  return layer_norm(c, c.tensor(c.arg(0)), ln.options.normalized_shape(), ln.weight, ln.bias, ln.options.eps());
}

/// InstanceNormalization (no running statistics: per-sample mean and variance).
template <typename Impl>
Value instance_norm_module(const Context& c, const torch::nn::Module& m) {
  const auto& in = as<Impl>(m);
  if (in.options.track_running_stats()) c.fail("InstanceNorm with running statistics has no ONNX form here");
  int64_t n = c.shape_of_arg(0).at(1);  // an imported module without affine says 0
  return instance_norm(c, c.tensor(c.arg(0)), n, present(in.weight) ? in.weight : at::Tensor(),
                       present(in.bias) ? in.bias : at::Tensor(), in.options.eps());
}

Value group_norm_module(const Context& c, const torch::nn::Module& m) {
  const auto& gn = as<torch::nn::GroupNormImpl>(m);
  return group_norm(c, gn.options.num_groups(), present(gn.weight) ? gn.weight : at::Tensor(),
                    present(gn.bias) ? gn.bias : at::Tensor(), gn.options.eps());
}

/// PRelu with the slope broadcast over the channel dim (dim 1).
Value prelu(const Context& c, const torch::nn::Module& m) {
  at::Tensor slope = as<torch::nn::PReLUImpl>(m).weight;
  int64_t rank = c.rank_of_arg(0);
  std::vector<int64_t> shape = {slope.numel()};
  for (int64_t i = 2; i < rank; ++i) shape.push_back(1);
  if (slope.numel() == 1) shape = {1};
  return Value::tensor(
      c.g().op("PRelu", {c.tensor(c.arg(0)), c.constant(c.hint() + "_slope", slope.reshape(shape))}, c.hint()));
}

Value gelu_module(const Context& c, const torch::nn::Module& m) {
  if (as<torch::nn::GELUImpl>(m).options.approximate() != "none")
    c.fail("GELU(approximate='tanh') has no ONNX form here");
  return Value::tensor(gelu(c, c.tensor(c.arg(0))));
}

Value recurrent_module(const Context& c, const torch::nn::Module& m) { return recurrent(c, m); }

ModuleRule unary_module(const std::string& op_type) {
  return [op_type](const Context& c, const torch::nn::Module&) { return unary(c, op_type); };
}

const std::map<std::string, ModuleRule>& float_rules() {
  using namespace torch::nn;
  static const std::map<std::string, ModuleRule> kRules = {
      {"torch.nn.Linear", weighted_float<LinearImpl>},
      {"torch.nn.Conv1d", weighted_float<Conv1dImpl>},
      {"torch.nn.Conv2d", weighted_float<Conv2dImpl>},
      {"torch.nn.Conv3d", weighted_float<Conv3dImpl>},
      {"torch.nn.ConvTranspose1d", weighted_float<ConvTranspose1dImpl>},
      {"torch.nn.ConvTranspose2d", weighted_float<ConvTranspose2dImpl>},
      {"torch.nn.ConvTranspose3d", weighted_float<ConvTranspose3dImpl>},
      {"torch.nn.Embedding", weighted_float<EmbeddingImpl>},
      {"torch.nn.EmbeddingBag", weighted_float<EmbeddingBagImpl>},
      {"torch.nn.MultiheadAttention", multihead_attention},
      {"torch.nn.TransformerEncoder", transformer_encoder},
      {"torch.nn.TransformerEncoderLayer", transformer_encoder},
      {"torch.nn.LSTM", recurrent_module},
      {"torch.nn.GRU", recurrent_module},
      {"torch.nn.RNN", recurrent_module},
      {"torch.nn.LSTMCell", recurrent_module},
      {"torch.nn.GRUCell", recurrent_module},
      {"torch.nn.RNNCell", recurrent_module},
      {"torch.nn.BatchNorm1d", batch_norm<BatchNorm1dImpl>},
      {"torch.nn.BatchNorm2d", batch_norm<BatchNorm2dImpl>},
      {"torch.nn.BatchNorm3d", batch_norm<BatchNorm3dImpl>},
      {"torch.nn.LayerNorm", layer_norm_module},
      {"torch.nn.InstanceNorm1d", instance_norm_module<InstanceNorm1dImpl>},
      {"torch.nn.InstanceNorm2d", instance_norm_module<InstanceNorm2dImpl>},
      {"torch.nn.InstanceNorm3d", instance_norm_module<InstanceNorm3dImpl>},
      {"torch.nn.GroupNorm", group_norm_module},
      {"torch.nn.PReLU", prelu},
      {"torch.nn.ReLU", unary_module("Relu")},
      {"torch.nn.ReLU6", [](const Context& c, const torch::nn::Module&) { return clip(c, 0, 6); }},
      {"torch.nn.Hardtanh",
       [](const Context& c, const torch::nn::Module& m) {
         const auto& o = as<HardtanhImpl>(m).options;
         return clip(c, o.min_val(), o.max_val());
       }},
      {"torch.nn.Sigmoid", unary_module("Sigmoid")},
      {"torch.nn.Tanh", unary_module("Tanh")},
      {"torch.nn.Hardswish",
       [](const Context& c, const torch::nn::Module&) { return Value::tensor(hardswish(c, c.tensor(c.arg(0)))); }},
      {"torch.nn.Hardsigmoid",
       [](const Context& c, const torch::nn::Module&) { return Value::tensor(hardsigmoid(c, c.tensor(c.arg(0)))); }},
      {"torch.nn.SiLU",
       [](const Context& c, const torch::nn::Module&) {
         std::string x = c.tensor(c.arg(0));
         return Value::tensor(c.g().op("Mul", {x, c.g().op("Sigmoid", {x}, c.hint() + "_sigmoid")}, c.hint()));
       }},
      {"torch.nn.GELU", gelu_module},
      {"torch.nn.LeakyReLU",
       [](const Context& c, const torch::nn::Module& m) {
         auto alpha = static_cast<float>(as<LeakyReLUImpl>(m).options.negative_slope());
         return unary(c, "LeakyRelu", {{"alpha", alpha}});
       }},
      {"torch.nn.ELU",
       [](const Context& c, const torch::nn::Module& m) {
         return unary(c, "Elu", {{"alpha", static_cast<float>(as<ELUImpl>(m).options.alpha())}});
       }},
      {"torch.nn.Softmax",
       [](const Context& c, const torch::nn::Module& m) { return softmax(c, as<SoftmaxImpl>(m).options.dim()); }},
      {"torch.nn.Dropout", [](const Context& c, const torch::nn::Module&) { return c.arg(0); }},
      {"torch.nn.Identity", [](const Context& c, const torch::nn::Module&) { return c.arg(0); }},
      {"torch.nn.Flatten",
       [](const Context& c, const torch::nn::Module& m) {
         const auto& o = as<FlattenImpl>(m).options;
         return flatten(c, o.start_dim(), o.end_dim());
       }},
      {"torch.nn.MaxPool1d", max_pool<MaxPool1dImpl>},
      {"torch.nn.MaxPool2d", max_pool<MaxPool2dImpl>},
      {"torch.nn.MaxPool3d", max_pool<MaxPool3dImpl>},
      {"torch.nn.AvgPool1d", avg_pool<AvgPool1dImpl>},
      {"torch.nn.AvgPool2d", avg_pool<AvgPool2dImpl>},
      {"torch.nn.AvgPool3d", avg_pool<AvgPool3dImpl>},
      {"torch.nn.AdaptiveAvgPool1d", adaptive_pool<1, AdaptiveAvgPool1dImpl>},
      {"torch.nn.AdaptiveAvgPool2d", adaptive_pool<2, AdaptiveAvgPool2dImpl>},
      {"torch.nn.AdaptiveAvgPool3d", adaptive_pool<3, AdaptiveAvgPool3dImpl>},
  };
  return kRules;
}

/// A fused module (ConvReLU2d, LinearReLU, ConvAdd2d, ...): its modules in turn.
Value fused(const Context& c, const nn::FusedModuleImpl& f, const std::string& path) {
  Value out = module_value(c, *f.module(0), path + ".0");
  if (nn::fused_kind_info(f.kind()).adds_second_input) {
    out = Value::tensor(c.g().op("Add", {c.tensor(out), c.tensor(c.arg(1))}, c.hint() + "_add"));
  }
  for (size_t i = 1; i < f.modules().size(); ++i) {
    out = module_value(c.with_args({out}), *f.module(i), path + "." + std::to_string(i));
  }
  return out;
}

}  // namespace

Value module_value(const Context& c, const torch::nn::Module& module, const std::string& path) {
  if (dynamic_cast<const quant::ActivationPostProcess*>(&module) != nullptr) return c.arg(0);  // observers pass values
  if (auto* ref = dynamic_cast<const nn::ReferenceModuleImpl*>(&module)) {
    return weighted(c, *ref->float_module(), ref->quantized_weight());
  }
  if (auto* rnn = dynamic_cast<const nn::ReferenceRNNImpl*>(&module)) return recurrent(c, *rnn->float_module(), rnn);
  if (auto* lstm = dynamic_cast<const nn::QuantizedLSTMImpl*>(&module)) return quantized_lstm(c, *lstm);
  if (auto* f = dynamic_cast<const nn::FusedModuleImpl*>(&module)) return fused(c, *f, path);
  std::string type = ir::module_type_name(module);
  auto it = float_rules().find(type);
  if (it == float_rules().end()) c.fail("module '" + path + "' of class " + type + " has no ONNX form");
  return it->second(c, module);
}

}  // namespace qfx::io::onnx_export
