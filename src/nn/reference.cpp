// Reference quantized modules: the float op with a quantize-dequantized
// weight, on the same ATen kernels as the float module.

#include "qfx/nn/reference.h"

#include "module_kinds.h"
#include "weighted_forward.h"
#include "qfx/quant/weight_kernels.h"

#include "qfx/quant/qtypes.h"

#include <ATen/ATen.h>
#include <typeindex>
#include <utility>
#include <torch/nn/functional/embedding.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

namespace qfx::nn {
namespace {

/// PyTorch's reference class for each float module class, the name it
/// prints under (1.13's reference EmbeddingBag calls itself an Embedding),
/// and its C++ class.
struct ReferenceClass {
  const char* float_type;
  const char* reference_type;
  const char* display_name;
  std::type_index type;
  std::shared_ptr<ReferenceModuleImpl> (*from_float)(std::shared_ptr<torch::nn::Module>, const WeightQParams&);
};

template <typename FloatImpl>
ReferenceClass row(const char* float_type, const char* reference_type, const char* display_name) {
  auto from_float = [](std::shared_ptr<torch::nn::Module> m,
                       const WeightQParams& q) -> std::shared_ptr<ReferenceModuleImpl> {
    auto typed = std::dynamic_pointer_cast<FloatImpl>(m);
    TORCH_CHECK(typed != nullptr, ir::module_type_name(*m), " is registered for another C++ class");
    return ReferenceImpl<FloatImpl>::from_float(std::move(typed), q);
  };
  return {float_type, reference_type, display_name, typeid(ReferenceImpl<FloatImpl>), from_float};
}

const std::vector<ReferenceClass>& reference_classes() {
  using namespace torch::nn;
  static const std::vector<ReferenceClass> kClasses = {
      row<LinearImpl>("torch.nn.Linear", "torch.ao.nn.quantized.reference.Linear", "QuantizedLinear(Reference)"),
      row<Conv1dImpl>("torch.nn.Conv1d", "torch.ao.nn.quantized.reference.Conv1d", "QuantizedConv1d(Reference)"),
      row<Conv2dImpl>("torch.nn.Conv2d", "torch.ao.nn.quantized.reference.Conv2d", "QuantizedConv2d(Reference)"),
      row<Conv3dImpl>("torch.nn.Conv3d", "torch.ao.nn.quantized.reference.Conv3d", "QuantizedConv3d(Reference)"),
      row<ConvTranspose1dImpl>("torch.nn.ConvTranspose1d", "torch.ao.nn.quantized.reference.ConvTranspose1d",
                               "QuantizedConvTranspose1d(Reference)"),
      row<ConvTranspose2dImpl>("torch.nn.ConvTranspose2d", "torch.ao.nn.quantized.reference.ConvTranspose2d",
                               "QuantizedConvTranspose2d(Reference)"),
      row<ConvTranspose3dImpl>("torch.nn.ConvTranspose3d", "torch.ao.nn.quantized.reference.ConvTranspose3d",
                               "QuantizedConvTranspose3d(Reference)"),
      row<EmbeddingImpl>("torch.nn.Embedding", "torch.ao.nn.quantized.reference.Embedding",
                         "QuantizedEmbedding(Reference)"),
      row<EmbeddingBagImpl>("torch.nn.EmbeddingBag", "torch.ao.nn.quantized.reference.EmbeddingBag",
                            "QuantizedEmbedding(Reference)"),
  };
  return kClasses;
}

const ReferenceClass* reference_class_of(const std::string& float_type) {
  for (const ReferenceClass& c : reference_classes()) {
    if (float_type == c.float_type) return &c;
  }
  return nullptr;
}

/// forward() of every reference kind: one tensor, plus EmbeddingBag's
/// optional offsets and per-sample weights.
c10::IValue reference_forward(torch::nn::Module& m, std::vector<c10::IValue>& in) {
  auto& ref = dynamic_cast<ReferenceModuleImpl&>(m);
  TORCH_CHECK(!in.empty() && in.size() <= 3 && in[0].isTensor(), ref.type_name(), " takes a tensor input, got ",
              in.size(), " input(s)");
  std::vector<at::Tensor> extra;
  for (size_t i = 1; i < in.size(); ++i) extra.push_back(in[i].isNone() ? at::Tensor() : in[i].toTensor());
  TORCH_CHECK(extra.empty() || ref.type_name() == "torch.ao.nn.quantized.reference.EmbeddingBag", ref.type_name(),
              " takes one input, got ", in.size());
  return ref.forward(in[0].toTensor(), extra);
}

}  // namespace

void register_reference_kinds() {
  auto extra_repr = [](const torch::nn::Module& m) {
    const auto& ref = detail::as<ReferenceModuleImpl>(m);
    const ir::ModuleKind* kind = ir::ModuleRegistry::instance().find(*ref.float_module());
    return kind && kind->extra_repr ? kind->extra_repr(*ref.float_module()) : std::string();
  };
  for (const ReferenceClass& c : reference_classes()) {
    ir::ModuleRegistry::instance().add({c.reference_type, c.type, &reference_forward, extra_repr, c.display_name});
  }
}

namespace detail {

namespace {

std::vector<int64_t> zeros(size_t n) { return std::vector<int64_t>(n, 0); }

template <size_t D>
at::Tensor conv(const torch::nn::detail::ConvNdOptions<D>& o, const at::Tensor& x, const at::Tensor& w,
                const at::Tensor& b, bool transposed) {
  const auto* padding = c10::get_if<torch::ExpandingArray<D>>(&o.padding());
  if (!transposed && !c10::get_if<torch::enumtype::kZeros>(&o.padding_mode())) {
    TORCH_CHECK(padding != nullptr, "reference conv: padding_mode needs numeric padding");
    std::vector<int64_t> pad;
    for (size_t i = D; i-- > 0;) pad.insert(pad.end(), {(**padding)[i], (**padding)[i]});
    std::string mode = torch::enumtype::get_enum_name(o.padding_mode());
    at::Tensor padded = at::pad(x, pad, ir::snake_case(mode.substr(1)));
    return at::convolution(padded, w, b, *o.stride(), zeros(D), *o.dilation(), false, zeros(D), o.groups());
  }
  if (padding != nullptr) {
    return at::convolution(x, w, b, *o.stride(), **padding, *o.dilation(), transposed, *o.output_padding(), o.groups());
  }
  c10::string_view mode = c10::get_if<torch::enumtype::kSame>(&o.padding()) ? "same" : "valid";
  if (D == 1) return at::conv1d(x, w, b, *o.stride(), mode, *o.dilation(), o.groups());
  if (D == 2) return at::conv2d(x, w, b, *o.stride(), mode, *o.dilation(), o.groups());
  return at::conv3d(x, w, b, *o.stride(), mode, *o.dilation(), o.groups());
}

}  // namespace

/// The float op of `m` with weight `w` (EmbeddingBag: `extra` holds offsets
/// and per-sample weights, each possibly undefined).
at::Tensor weighted_forward(const torch::nn::Module& m, const at::Tensor& x, const at::Tensor& w,
                            const std::vector<at::Tensor>& extra) {
  using namespace torch::nn;
  namespace F = torch::nn::functional;
  if (auto* e = dynamic_cast<const EmbeddingImpl*>(&m)) {
    const auto& o = e->options;
    return F::detail::embedding(x, w, o.padding_idx(), o.max_norm(), o.norm_type(), o.scale_grad_by_freq(), o.sparse());
  }
  if (auto* e = dynamic_cast<const EmbeddingBagImpl*>(&m)) {
    const auto& o = e->options;
    at::Tensor offsets = extra.size() > 0 ? extra[0] : at::Tensor();
    at::Tensor per_sample_weights = extra.size() > 1 ? extra[1] : at::Tensor();
    return F::detail::embedding_bag(x, w, offsets, o.max_norm(), o.norm_type(), o.scale_grad_by_freq(), o.mode(),
                                    o.sparse(), per_sample_weights, o.include_last_offset(), o.padding_idx());
  }
  if (auto* l = dynamic_cast<const LinearImpl*>(&m)) return at::linear(x, w, l->bias);
  if (auto* c = dynamic_cast<const Conv1dImpl*>(&m)) return conv(c->options, x, w, c->bias, false);
  if (auto* c = dynamic_cast<const Conv2dImpl*>(&m)) return conv(c->options, x, w, c->bias, false);
  if (auto* c = dynamic_cast<const Conv3dImpl*>(&m)) return conv(c->options, x, w, c->bias, false);
  if (auto* c = dynamic_cast<const ConvTranspose1dImpl*>(&m)) return conv(c->options, x, w, c->bias, true);
  if (auto* c = dynamic_cast<const ConvTranspose2dImpl*>(&m)) return conv(c->options, x, w, c->bias, true);
  if (auto* c = dynamic_cast<const ConvTranspose3dImpl*>(&m)) return conv(c->options, x, w, c->bias, true);
  TORCH_CHECK(false, "no reference quantized module for ", ir::module_type_name(m));
}

at::Tensor weighted_forward_with_bias(const torch::nn::Module& m, const at::Tensor& x, const at::Tensor& w,
                                      const at::Tensor& b) {
  using namespace torch::nn;
  if (dynamic_cast<const LinearImpl*>(&m)) return at::linear(x, w, b);
  if (auto* c = dynamic_cast<const Conv1dImpl*>(&m)) return conv(c->options, x, w, b, false);
  if (auto* c = dynamic_cast<const Conv2dImpl*>(&m)) return conv(c->options, x, w, b, false);
  if (auto* c = dynamic_cast<const Conv3dImpl*>(&m)) return conv(c->options, x, w, b, false);
  TORCH_CHECK(false, "expects a Linear or Conv module, got ", ir::module_type_name(m));
}

}  // namespace detail

WeightQParams weight_qparams_of(quant::ActivationPostProcess& observer) {
  WeightQParams q;
  q.dtype = observer.dtype();
  c10::QScheme scheme = observer.qscheme();
  q.qscheme = quant::is_per_tensor(scheme)          ? c10::kPerTensorAffine
              : scheme == c10::kPerChannelSymmetric ? c10::kPerChannelAffine
                                                    : scheme;
  if (quant::is_per_channel(scheme)) q.axis = observer.ch_axis();
  if (!quant::is_quantized_dtype(q.dtype)) return q;  // float16 weights: a PlaceholderObserver, no qparams
  quant::QParams qparams = observer.calculate_qparams();
  q.scale = qparams.scale.clone();
  q.zero_point = qparams.zero_point.clone();
  return q;
}

WeightQParams deep_copy_of(const WeightQParams& qparams) {
  WeightQParams copy = qparams;
  if (copy.scale.defined()) copy.scale = copy.scale.clone();
  if (copy.zero_point.defined()) copy.zero_point = copy.zero_point.clone();
  return copy;
}

at::Tensor quantize_weight(const at::Tensor& weight, const WeightQParams& q) {
  if (q.dtype == c10::kHalf) return weight.to(c10::kHalf);
  if (q.qscheme == c10::kPerTensorAffine) return quant::quantize_tensor(weight, q.scale, q.zero_point, q.dtype);
  return quant::quantize_channels(weight, q.scale, q.zero_point, q.axis, q.dtype);
}

at::Tensor quantize_dequantize_weight(const at::Tensor& weight, const WeightQParams& q) {
  return quantize_weight(weight, q).dequantize();
}

ReferenceModuleImpl::ReferenceModuleImpl(std::shared_ptr<torch::nn::Module> float_module, WeightQParams qparams)
    : float_(std::move(float_module)), qparams_(std::move(qparams)) {
  const ReferenceClass* reference = reference_class_of(ir::module_type_name(*float_));
  TORCH_CHECK(reference != nullptr, "no reference quantized module for ", ir::module_type_name(*float_));
  type_name_ = reference->reference_type;
  for (const auto& p : float_->named_parameters(/*recurse=*/false)) register_parameter(p.key(), p.value());
  register_buffer("weight_scale", qparams_.scale);
  register_buffer("weight_zero_point", qparams_.zero_point);
  register_buffer("weight_axis", at::tensor(static_cast<int32_t>(qparams_.axis)));
  train(float_->is_training());
}

ReferenceModuleImpl::ReferenceModuleImpl(const ReferenceModuleImpl& other, DeepCopy)
    : ReferenceModuleImpl(other.float_->clone(), deep_copy_of(other.qparams_)) {
  train(other.is_training());
}

at::Tensor ReferenceModuleImpl::weight_dequantized() const {
  return quantize_dequantize_weight(*named_parameters(false).find("weight"), qparams_);
}

at::Tensor ReferenceModuleImpl::quantized_weight() const {
  return quantize_weight(*named_parameters(false).find("weight"), qparams_);
}

at::Tensor ReferenceModuleImpl::forward(const at::Tensor& x, const std::vector<at::Tensor>& extra) {
  return detail::weighted_forward(*float_, x, weight_dequantized(), extra);
}

template <typename FloatImpl>
ReferenceImpl<FloatImpl>::ReferenceImpl(std::shared_ptr<FloatImpl> float_module, WeightQParams qparams)
    : ReferenceModuleImpl(std::move(float_module), std::move(qparams)) {}

template class ReferenceImpl<torch::nn::LinearImpl>;
template class ReferenceImpl<torch::nn::Conv1dImpl>;
template class ReferenceImpl<torch::nn::Conv2dImpl>;
template class ReferenceImpl<torch::nn::Conv3dImpl>;
template class ReferenceImpl<torch::nn::ConvTranspose1dImpl>;
template class ReferenceImpl<torch::nn::ConvTranspose2dImpl>;
template class ReferenceImpl<torch::nn::ConvTranspose3dImpl>;
template class ReferenceImpl<torch::nn::EmbeddingImpl>;
template class ReferenceImpl<torch::nn::EmbeddingBagImpl>;

bool has_reference_module(const std::string& float_type) { return reference_class_of(float_type) != nullptr; }

std::shared_ptr<ReferenceModuleImpl> reference_from_float(std::shared_ptr<torch::nn::Module> float_module,
                                                          const WeightQParams& qparams) {
  const ReferenceClass* reference = reference_class_of(ir::module_type_name(*float_module));
  TORCH_CHECK(reference != nullptr, "no reference quantized module for ", ir::module_type_name(*float_module));
  return reference->from_float(std::move(float_module), qparams);
}

}  // namespace qfx::nn
