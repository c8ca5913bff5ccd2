// from_reference for every quantized module class: quantize the weight
// with the reference module's qparams, prepack it for the current engine,
// and keep PyTorch's attributes and extra_repr.

#include "qfx/nn/intrinsic.h"
#include "qfx/nn/quantized.h"
#include "qfx/nn/reference.h"
#include "qfx/ir/kernel_workarounds.h"
#include "qfx/ir/python_literals.h"
#include "qfx/quant/qtypes.h"

#include "module_kinds.h"
#include "own_tensors.h"
#include "quantized_kinds.h"

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

namespace qfx::nn {

at::Tensor detail::own_parameter(const torch::nn::Module& m, const char* name) {
  auto params = m.named_parameters(false);  // find() points into this dict
  const at::Tensor* t = params.find(name);
  return t != nullptr ? *t : at::Tensor();
}

namespace {

using detail::as;
using detail::call_op;
using detail::py_bool;
using detail::py_float;
using detail::py_tuple;
using Source = const torch::nn::Module&;
using Output = std::optional<OutputQParams>;
using QuantizedPtr = std::shared_ptr<QuantizedModuleImpl>;
using A = CallArg;

/// The module itself, or the first part of a fused module.
const torch::nn::Module& first_part(Source src) {
  if (auto* fused = dynamic_cast<const FusedModuleImpl*>(&src)) return *fused->module(0);
  return src;
}

const ReferenceModuleImpl& reference_in(Source src) {
  auto* ref = dynamic_cast<const ReferenceModuleImpl*>(&first_part(src));
  TORCH_CHECK(ref != nullptr, "expects a reference quantized module, got ", ir::module_type_name(first_part(src)));
  return *ref;
}

c10::IValue optional_tensor(const at::Tensor& t) { return t.defined() ? c10::IValue(t) : c10::IValue(); }

at::Tensor param(const torch::nn::Module& m, const char* name) { return detail::own_parameter(m, name); }

at::Tensor buffer(const torch::nn::Module& m, const char* name) {
  auto buffers = m.named_buffers(false);  // find() points into this dict
  const at::Tensor* t = buffers.find(name);
  return t != nullptr ? *t : at::Tensor();
}

const OutputQParams& output_of(const std::string& type, const Output& output) {
  TORCH_CHECK(output.has_value(), type, " needs the output's scale and zero point");
  return *output;
}

QuantizedAttributes output_attributes(const OutputQParams& out) {
  return {{"scale", out.scale}, {"zero_point", out.zero_point}};
}

std::string output_repr(const OutputQParams& out) {
  return "scale=" + py_float(out.scale) + ", zero_point=" + std::to_string(out.zero_point);
}

std::string relu_suffix(const std::string& type) { return type.find("ReLU") != std::string::npos ? "_relu" : ""; }

// --- Linear ---------------------------------------------------------------

std::string linear_sizes(const at::Tensor& w) {
  return "in_features=" + std::to_string(w.size(1)) + ", out_features=" + std::to_string(w.size(0));
}

QuantizedPtr static_linear(const std::string& type, Source src, const Output& output) {
  const ReferenceModuleImpl& ref = reference_in(src);
  const OutputQParams& out = output_of(type, output);
  at::Tensor w = ref.quantized_weight();
  c10::IValue packed = call_op("quantized::linear_prepack", "", {w, optional_tensor(param(ref, "bias"))});
  QuantizedAttributes attrs = output_attributes(out);
  attrs.emplace_back("_packed_params", packed);
  std::string repr = linear_sizes(w) + ", " + output_repr(out) + ", qscheme=" + quant::qscheme_name(w.qscheme());
  return detail::make_quantized(type,
                                {"quantized::linear" + relu_suffix(type),
                                 "",
                                 {A::in(0), A::attr("_packed_params"), A::attr("scale"), A::attr("zero_point")}},
                                std::move(attrs), repr);
}

QuantizedPtr dynamic_linear(const std::string& type, Source src, const Output&) {
  const ReferenceModuleImpl& ref = reference_in(src);
  at::Tensor w = ref.quantized_weight();
  c10::IValue bias = optional_tensor(param(ref, "bias"));
  bool fp16 = w.scalar_type() == c10::kHalf;
  TORCH_CHECK(fp16 || w.scalar_type() == c10::kQInt8, type, " needs a qint8 or float16 weight, got ",
              c10::toString(w.scalar_type()));
  c10::IValue packed = fp16 ? call_op("quantized::linear_prepack_fp16", "", {w.to(at::kFloat), bias})
                            : call_op("quantized::linear_prepack", "", {w, bias});
  std::string op = "quantized::linear" + relu_suffix(type) + (fp16 ? "_dynamic_fp16" : "_dynamic");
  std::vector<CallArg> args = {A::in(0), A::attr("_packed_params")};
  if (!fp16) args.push_back(A::value(true));  // reduce_range, as the module's version 4 forward
  std::string repr = linear_sizes(w) + ", dtype=" + ir::dtype_name(w.scalar_type());
  if (!fp16) repr += ", qscheme=" + quant::qscheme_name(w.qscheme());
  return detail::make_quantized(type, {op, "", std::move(args)}, {{"_packed_params", packed}}, repr);
}

// --- Conv -----------------------------------------------------------------

struct ConvShape {
  int64_t in_channels, out_channels, groups;
  std::vector<int64_t> kernel, stride, padding, output_padding, dilation;
  bool bias;
  std::string padding_mode;
};

template <size_t D>
ConvShape conv_shape(const torch::nn::detail::ConvNdOptions<D>& o) {
  const auto* padding = c10::get_if<torch::ExpandingArray<D>>(&o.padding());
  TORCH_CHECK(padding != nullptr, "quantized convs need numeric padding, not 'same' or 'valid'");
  std::string mode = torch::enumtype::get_enum_name(o.padding_mode());
  auto vec = [](c10::IntArrayRef v) { return v.vec(); };
  return {o.in_channels(),
          o.out_channels(),
          o.groups(),
          vec(*o.kernel_size()),
          vec(*o.stride()),
          vec(**padding),
          vec(*o.output_padding()),
          vec(*o.dilation()),
          o.bias(),
          ir::snake_case(mode.substr(1))};
}

ConvShape conv_shape_of(const torch::nn::Module& m) {
  using namespace torch::nn;
  if (auto* c = dynamic_cast<const Conv1dImpl*>(&m)) return conv_shape(c->options);
  if (auto* c = dynamic_cast<const Conv2dImpl*>(&m)) return conv_shape(c->options);
  if (auto* c = dynamic_cast<const Conv3dImpl*>(&m)) return conv_shape(c->options);
  if (auto* c = dynamic_cast<const ConvTranspose1dImpl*>(&m)) return conv_shape(c->options);
  if (auto* c = dynamic_cast<const ConvTranspose2dImpl*>(&m)) return conv_shape(c->options);
  TORCH_CHECK(false, "expects a convolution, got ", ir::module_type_name(m));
}

bool all_zero(const std::vector<int64_t>& v) {
  return std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 0; });
}

/// Python's _ConvNd.extra_repr of the quantized convs.
std::string conv_repr(const ConvShape& s, const OutputQParams& out) {
  std::string r = std::to_string(s.in_channels) + ", " + std::to_string(s.out_channels) +
                  ", kernel_size=" + py_tuple(s.kernel) + ", stride=" + py_tuple(s.stride) + ", " + output_repr(out);
  if (!all_zero(s.padding)) r += ", padding=" + py_tuple(s.padding);
  if (!std::all_of(s.dilation.begin(), s.dilation.end(), [](int64_t x) { return x == 1; })) {
    r += ", dilation=" + py_tuple(s.dilation);
  }
  if (!all_zero(s.output_padding)) r += ", output_padding=" + py_tuple(s.output_padding);
  if (s.groups != 1) r += ", groups=" + std::to_string(s.groups);
  if (!s.bias) r += ", bias=False";
  return r;
}

/// PyTorch's _reverse_repeat_padding.
std::vector<int64_t> reversed_padding_repeated_twice(const std::vector<int64_t>& padding) {
  std::vector<int64_t> out;
  for (size_t i = padding.size(); i-- > 0;) out.insert(out.end(), {padding[i], padding[i]});
  return out;
}

QuantizedPtr conv(const std::string& type, Source src, const Output& output) {
  const ReferenceModuleImpl& ref = reference_in(src);
  const OutputQParams& out = output_of(type, output);
  ConvShape s = conv_shape_of(*ref.float_module());
  size_t d = s.kernel.size();
  bool transposed = type.find("Transpose") != std::string::npos;
  TORCH_CHECK(!transposed || s.padding_mode == "zeros", type, " supports only zeros padding");
  std::vector<int64_t> pack_padding = s.padding_mode == "zeros" ? s.padding : std::vector<int64_t>(d, 0);
  std::string dims = std::to_string(d) + "d";
  at::Tensor w = ref.quantized_weight();
  c10::IValue bias = optional_tensor(param(ref, "bias"));
  c10::IValue packed =
      detail::prepack_conv(dims, transposed, w, bias, {s.stride, pack_padding, s.output_padding, s.dilation, s.groups});
  QuantizedAttributes attrs = output_attributes(out);
  attrs.emplace_back("_packed_params", packed);
  attrs.emplace_back("padding_mode", s.padding_mode);
  attrs.emplace_back("_reversed_padding_repeated_twice", reversed_padding_repeated_twice(s.padding));
  std::string op = transposed ? "quantized::conv_transpose" + dims : "quantized::conv" + dims + relu_suffix(type);
  std::string overload = transposed || d == 1 ? "" : "new";
  return detail::make_quantized(
      type, {op, overload, {A::in(0), A::attr("_packed_params"), A::attr("scale"), A::attr("zero_point")}},
      std::move(attrs), conv_repr(s, out));
}

// --- Normalization ----------------------------------------------------------

QuantizedPtr batch_norm(const std::string& type, Source src, const Output& output) {
  const torch::nn::Module& bn = first_part(src);
  const OutputQParams& out = output_of(type, output);
  double eps = 0;
  c10::optional<double> momentum;
  int64_t features = 0;
  if (auto* b = dynamic_cast<const torch::nn::BatchNorm2dImpl*>(&bn)) {
    eps = b->options.eps(), momentum = b->options.momentum(), features = b->options.num_features();
  } else if (auto* b3 = dynamic_cast<const torch::nn::BatchNorm3dImpl*>(&bn)) {
    eps = b3->options.eps(), momentum = b3->options.momentum(), features = b3->options.num_features();
  } else {
    TORCH_CHECK(false, type, " expects a BatchNorm2d/3d, got ", ir::module_type_name(bn));
  }
  QuantizedAttributes attrs = {{"weight", optional_tensor(param(bn, "weight"))},
                               {"bias", optional_tensor(param(bn, "bias"))},
                               {"running_mean", buffer(bn, "running_mean")},
                               {"running_var", buffer(bn, "running_var")},
                               {"eps", eps}};
  for (auto& kv : output_attributes(out)) attrs.push_back(std::move(kv));
  std::string dims = type.find("3d") != std::string::npos ? "3d" : "2d";
  std::string repr = std::to_string(features) + ", eps=" + py_float(eps) +
                     ", momentum=" + (momentum ? py_float(*momentum) : "None") +
                     ", affine=True, track_running_stats=True";
  return detail::make_quantized(type,
                                {"quantized::batch_norm" + dims + relu_suffix(type),
                                 "",
                                 {A::in(0), A::attr("weight"), A::attr("bias"), A::attr("running_mean"),
                                  A::attr("running_var"), A::attr("eps"), A::attr("scale"), A::attr("zero_point")}},
                                std::move(attrs), repr);
}

template <typename Impl>
bool instance_norm_options(Source m, int64_t& features, double& eps, bool& affine, bool& running_stats) {
  auto* n = dynamic_cast<const Impl*>(&m);
  if (n == nullptr) return false;
  features = n->options.num_features(), eps = n->options.eps(), affine = n->options.affine();
  running_stats = n->options.track_running_stats() && n->running_mean.defined() && n->running_var.defined();
  return true;
}

/// An InstanceNorm with running stats computes with them in eval: as
/// quantized::batch_norm does with them (ir/kernel_workarounds.h; PyTorch
/// 1.13's quantized InstanceNorm uses the input's statistics instead).
QuantizedPtr instance_norm_with_running_stats(const std::string& type, Source src, const OutputQParams& out,
                                              int64_t features, double eps, bool affine) {
  at::Tensor weight = param(src, "weight"), bias = param(src, "bias");
  QuantizedAttributes attrs = {{"weight", affine ? weight : at::ones({features})},
                               {"bias", affine ? bias : at::zeros({features})},
                               {"running_mean", buffer(src, "running_mean")},
                               {"running_var", buffer(src, "running_var")},
                               {"eps", eps}};
  for (auto& kv : output_attributes(out)) attrs.push_back(std::move(kv));
  std::string repr = std::to_string(features) + ", eps=" + py_float(eps) + ", momentum=0.1, affine=" + py_bool(affine) +
                     ", track_running_stats=True";
  return detail::make_quantized(type,
                                {"quantized::batch_norm",
                                 "",
                                 {A::in(0), A::attr("weight"), A::attr("bias"), A::attr("running_mean"),
                                  A::attr("running_var"), A::attr("eps"), A::attr("scale"), A::attr("zero_point")}},
                                std::move(attrs), repr);
}

QuantizedPtr instance_norm(const std::string& type, Source src, const Output& output) {
  const OutputQParams& out = output_of(type, output);
  int64_t features = 0;
  double eps = 0;
  bool affine = false, running_stats = false;
  TORCH_CHECK(instance_norm_options<torch::nn::InstanceNorm1dImpl>(src, features, eps, affine, running_stats) ||
                  instance_norm_options<torch::nn::InstanceNorm2dImpl>(src, features, eps, affine, running_stats) ||
                  instance_norm_options<torch::nn::InstanceNorm3dImpl>(src, features, eps, affine, running_stats),
              type, " expects an InstanceNorm, got ", ir::module_type_name(src));
  if (running_stats && ir::kernel_workarounds())
    return instance_norm_with_running_stats(type, src, out, features, eps, affine);
  QuantizedAttributes attrs = {
      {"weight", optional_tensor(param(src, "weight"))}, {"bias", optional_tensor(param(src, "bias"))}, {"eps", eps}};
  for (auto& kv : output_attributes(out)) attrs.push_back(std::move(kv));
  std::string repr = std::to_string(features) + ", eps=" + py_float(eps) + ", momentum=0.1, affine=" + py_bool(affine) +
                     ", track_running_stats=False";
  return detail::make_quantized(
      type,
      {"quantized::instance_norm",
       "",
       {A::in(0), A::attr("weight"), A::attr("bias"), A::attr("eps"), A::attr("scale"), A::attr("zero_point")}},
      std::move(attrs), repr);
}

QuantizedPtr layer_norm(const std::string& type, Source src, const Output& output) {
  const OutputQParams& out = output_of(type, output);
  const auto& o = as<torch::nn::LayerNormImpl>(src).options;
  QuantizedAttributes attrs = {{"normalized_shape", o.normalized_shape()},
                               {"weight", optional_tensor(param(src, "weight"))},
                               {"bias", optional_tensor(param(src, "bias"))},
                               {"eps", o.eps()}};
  for (auto& kv : output_attributes(out)) attrs.push_back(std::move(kv));
  std::string repr = py_tuple(o.normalized_shape()) + ", eps=" + py_float(o.eps()) +
                     ", elementwise_affine=" + py_bool(o.elementwise_affine());
  return detail::make_quantized(type,
                                {"quantized::layer_norm",
                                 "",
                                 {A::in(0), A::attr("normalized_shape"), A::attr("weight"), A::attr("bias"),
                                  A::attr("eps"), A::attr("scale"), A::attr("zero_point")}},
                                std::move(attrs), repr);
}

// --- Activations and dropout ------------------------------------------------

QuantizedPtr elu(const std::string& type, Source src, const Output& output) {
  const OutputQParams& out = output_of(type, output);
  double alpha = as<torch::nn::ELUImpl>(src).options.alpha();
  QuantizedAttributes attrs = output_attributes(out);
  attrs.emplace_back("alpha", alpha);
  return detail::make_quantized(type,
                                {"quantized::elu",
                                 "",
                                 {A::in(0), A::attr("scale"), A::attr("zero_point"), A::attr("alpha"),
                                  A::value(int64_t{1}), A::value(int64_t{1})}},
                                std::move(attrs), "alpha=" + py_float(alpha));
}

QuantizedPtr leaky_relu(const std::string& type, Source src, const Output& output) {
  const OutputQParams& out = output_of(type, output);
  const auto& o = as<torch::nn::LeakyReLUImpl>(src).options;
  QuantizedAttributes attrs = {{"negative_slope", o.negative_slope()}, {"inplace", o.inplace()}};
  for (auto& kv : output_attributes(out)) attrs.push_back(std::move(kv));
  std::string repr = "negative_slope=" + py_float(o.negative_slope()) + (o.inplace() ? ", inplace=True" : "");
  return detail::make_quantized(
      type,
      {"quantized::leaky_relu",
       "",
       {A::in(0), A::attr("negative_slope"), A::attr("inplace"), A::attr("scale"), A::attr("zero_point")}},
      std::move(attrs), repr);
}

QuantizedPtr hardswish(const std::string& type, Source, const Output& output) {
  return detail::make_quantized(type, {"quantized::hardswish", "", {A::in(0), A::attr("scale"), A::attr("zero_point")}},
                                output_attributes(output_of(type, output)), "");
}

QuantizedPtr softmax(const std::string& type, Source src, const Output& output) {
  int64_t dim = as<torch::nn::SoftmaxImpl>(src).options.dim();
  QuantizedAttributes attrs = {{"dim", dim}};
  for (auto& kv : output_attributes(output_of(type, output))) attrs.push_back(std::move(kv));
  return detail::make_quantized(
      type, {"quantized::softmax", "", {A::in(0), A::attr("dim"), A::attr("scale"), A::attr("zero_point")}},
      std::move(attrs), "dim=" + std::to_string(dim));
}

QuantizedPtr dropout(const std::string& type, Source src, const Output&) {
  const auto& o = as<torch::nn::DropoutImpl>(src).options;
  return detail::make_quantized(type, {"", "", {}}, {{"p", o.p()}, {"inplace", o.inplace()}},
                                "p=" + py_float(o.p()) + ", inplace=" + py_bool(o.inplace()));
}

// --- Embeddings (weight only) -----------------------------------------------

QuantizedPtr embedding(const std::string& type, Source src, const Output&) {
  const ReferenceModuleImpl& ref = reference_in(src);
  at::Tensor w = ref.quantized_weight();
  bool four_bit = w.scalar_type() == c10::kQUInt4x2;
  TORCH_CHECK(four_bit || w.scalar_type() == c10::kQUInt8, type,
              ": the only supported weight dtypes are torch.quint8 and torch.quint4x2, got ",
              ir::dtype_name(w.scalar_type()));
  c10::IValue packed = call_op("quantized::embedding_bag_prepack", "", {w});
  std::string repr = "num_embeddings=" + std::to_string(w.size(0)) + ", embedding_dim=" + std::to_string(w.size(1)) +
                     ", dtype=" + ir::dtype_name(w.scalar_type()) + ", qscheme=" + quant::qscheme_name(w.qscheme());
  std::string width = four_bit ? "4bit" : "byte";
  if (type == "torch.ao.nn.quantized.Embedding") {
    return detail::make_quantized(
        type, {"quantized::embedding_" + width, "", {A::attr("_packed_params"), A::in(0), A::value(false)}},
        {{"_packed_params", packed}}, repr);
  }
  bool last_offset = as<torch::nn::EmbeddingBagImpl>(*ref.float_module()).options.include_last_offset();
  // PyTorch's quantized EmbeddingBag passes mode 0 (sum) whatever the float module's mode.
  return detail::make_quantized(
      type,
      {"quantized::embedding_bag_" + width,
       "",
       {A::attr("_packed_params"), A::in(0), A::optional_in(1), A::value(false), A::value(int64_t{0}),
        A::attr("pruned_weights"), A::optional_in(2), A::optional_in(3), A::attr("include_last_offset")}},
      {{"_packed_params", packed}, {"pruned_weights", false}, {"include_last_offset", last_offset}}, repr);
}

// --- The table ---------------------------------------------------------------

using Factory = QuantizedPtr (*)(const std::string&, Source, const Output&);

struct FactoryRow {
  const char* type;
  Factory make;
};

const FactoryRow kFactories[] = {
    {"torch.ao.nn.quantized.Linear", static_linear},
    {"torch.ao.nn.intrinsic.quantized.LinearReLU", static_linear},
    {"torch.ao.nn.quantized.dynamic.Linear", dynamic_linear},
    {"torch.ao.nn.intrinsic.quantized.dynamic.LinearReLU", dynamic_linear},
    {"torch.ao.nn.quantized.Conv1d", conv},
    {"torch.ao.nn.quantized.Conv2d", conv},
    {"torch.ao.nn.quantized.Conv3d", conv},
    {"torch.ao.nn.intrinsic.quantized.ConvReLU1d", conv},
    {"torch.ao.nn.intrinsic.quantized.ConvReLU2d", conv},
    {"torch.ao.nn.intrinsic.quantized.ConvReLU3d", conv},
    {"torch.ao.nn.quantized.ConvTranspose1d", conv},
    {"torch.ao.nn.quantized.ConvTranspose2d", conv},
    {"torch.ao.nn.quantized.BatchNorm2d", batch_norm},
    {"torch.ao.nn.quantized.BatchNorm3d", batch_norm},
    {"torch.ao.nn.intrinsic.quantized.BNReLU2d", batch_norm},
    {"torch.ao.nn.intrinsic.quantized.BNReLU3d", batch_norm},
    {"torch.ao.nn.quantized.InstanceNorm1d", instance_norm},
    {"torch.ao.nn.quantized.InstanceNorm2d", instance_norm},
    {"torch.ao.nn.quantized.InstanceNorm3d", instance_norm},
    {"torch.ao.nn.quantized.LayerNorm", layer_norm},
    {"torch.ao.nn.quantized.ELU", elu},
    {"torch.ao.nn.quantized.LeakyReLU", leaky_relu},
    {"torch.ao.nn.quantized.Hardswish", hardswish},
    {"torch.ao.nn.quantized.Softmax", softmax},
    {"torch.ao.nn.quantized.Dropout", dropout},
    {"torch.ao.nn.quantized.Embedding", embedding},
    {"torch.ao.nn.quantized.EmbeddingBag", embedding},
};

}  // namespace

std::shared_ptr<QuantizedModuleImpl> quantized_from_reference(const std::string& quantized_type, Source source,
                                                              std::optional<OutputQParams> output) {
  for (const FactoryRow& row : kFactories) {
    if (quantized_type == row.type) return row.make(quantized_type, source, output);
  }
  TORCH_CHECK(false, "no quantized module class ", quantized_type);
}

}  // namespace qfx::nn
