// Activations missing from LibTorch's torch::nn, computed with the same ATen
// ops as PyTorch's functional forms.

#include "qfx/nn/activation.h"

#include <ATen/ATen.h>

namespace qfx::nn {

at::Tensor HardswishImpl::forward(at::Tensor input) {
  return options.inplace() ? at::hardswish_(input) : at::hardswish(input);
}

at::Tensor HardsigmoidImpl::forward(at::Tensor input) {
  return options.inplace() ? at::hardsigmoid_(input) : at::hardsigmoid(input);
}

at::Tensor SiLUImpl::forward(at::Tensor input) {
  return options.inplace() ? at::silu_(input) : at::silu(input);
}

}  // namespace qfx::nn
