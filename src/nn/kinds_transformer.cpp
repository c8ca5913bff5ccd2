// Module kinds: nn.MultiheadAttention and its output projection,
// nn.TransformerEncoderLayer, nn.TransformerEncoder and the ModuleList of its layers.

#include "module_kinds.h"

#include "qfx/nn/attention.h"
#include "qfx/nn/transformer.h"

namespace qfx::nn {
namespace {

using detail::add_kind;
using detail::as;
using detail::py_bool;

std::string projection_repr(const torch::nn::Module& m) {
  const auto& linear = as<NonDynamicallyQuantizableLinearImpl>(m);
  return "in_features=" + std::to_string(linear.in_features) + ", out_features=" + std::to_string(linear.out_features) +
         ", bias=" + py_bool(linear.bias.defined());
}

c10::IValue attention_forward(torch::nn::Module& m, std::vector<c10::IValue>& in) {
  return dynamic_cast<MultiheadAttentionImpl&>(m).forward(MultiheadAttentionImpl::inputs_of(in));
}

/// Positional Tensor-or-None input `i`, undefined when absent or None.
at::Tensor optional_input(const std::vector<c10::IValue>& in, size_t i) {
  return i < in.size() && !in[i].isNone() ? in[i].toTensor() : at::Tensor();
}

/// forward(src, mask, src_key_padding_mask) of the encoder and its layer.
template <typename Impl>
c10::IValue encoder_forward(torch::nn::Module& m, std::vector<c10::IValue>& in) {
  TORCH_CHECK(!in.empty() && in.size() <= 3 && in[0].isTensor(), m.name(), " takes src and two optional masks, got ",
              in.size(), " input(s)");
  return dynamic_cast<Impl&>(m).forward(in[0].toTensor(), optional_input(in, 1), optional_input(in, 2));
}

c10::IValue not_callable(torch::nn::Module& m, std::vector<c10::IValue>&) {
  TORCH_CHECK(false, "a ModuleList is not callable (", m.name(), ")");
}

}  // namespace

void register_attention_kinds() {
  add_kind<NonDynamicallyQuantizableLinearImpl>("torch.nn.modules.linear.NonDynamicallyQuantizableLinear",
                                                projection_repr);
  // Python's MultiheadAttention has no extra_repr: it prints its out_proj only
  add_kind<MultiheadAttentionImpl>("torch.nn.MultiheadAttention", nullptr, attention_forward);
  add_kind<TransformerEncoderLayerImpl>("torch.nn.TransformerEncoderLayer", nullptr,
                                        encoder_forward<TransformerEncoderLayerImpl>);
  add_kind<TransformerEncoderImpl>("torch.nn.TransformerEncoder", nullptr, encoder_forward<TransformerEncoderImpl>);
  add_kind<torch::nn::ModuleListImpl>("torch.nn.ModuleList", nullptr, not_callable);
}

}  // namespace qfx::nn
