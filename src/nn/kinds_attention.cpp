// Module kinds: nn.MultiheadAttention and its output projection.

#include "module_kinds.h"

#include "qfx/nn/attention.h"

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

}  // namespace

void register_attention_kinds() {
  add_kind<NonDynamicallyQuantizableLinearImpl>("torch.nn.modules.linear.NonDynamicallyQuantizableLinear",
                                                projection_repr);
  // Python's MultiheadAttention has no extra_repr: it prints its out_proj only
  add_kind<MultiheadAttentionImpl>("torch.nn.MultiheadAttention", nullptr, attention_forward);
}

}  // namespace qfx::nn
