#pragma once
/// \file
/// Float activation modules that LibTorch's `torch::nn` lacks (Hardswish,
/// Hardsigmoid) or has without PyTorch's `inplace` flag (SiLU). In the
/// LibTorch module idiom; registered as `torch.nn.Hardswish`, ... .

#include <torch/arg.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>

namespace qfx::nn {

/// Options of the element-wise activations below.
struct ActivationOptions {
  /// Compute in place, as PyTorch's `inplace=True`.
  TORCH_ARG(bool, inplace) = false;
};

/// `torch.nn.Hardswish`: x * relu6(x + 3) / 6.
class HardswishImpl : public torch::nn::Cloneable<HardswishImpl> {
 public:
  explicit HardswishImpl(ActivationOptions options = {}) : options(options) {}
  void reset() override {}
  at::Tensor forward(at::Tensor input);
  ActivationOptions options;
};
TORCH_MODULE(Hardswish);

/// `torch.nn.Hardsigmoid`: relu6(x + 3) / 6.
class HardsigmoidImpl : public torch::nn::Cloneable<HardsigmoidImpl> {
 public:
  explicit HardsigmoidImpl(ActivationOptions options = {}) : options(options) {}
  void reset() override {}
  at::Tensor forward(at::Tensor input);
  ActivationOptions options;
};
TORCH_MODULE(Hardsigmoid);

/// `torch.nn.SiLU`: x * sigmoid(x).
class SiLUImpl : public torch::nn::Cloneable<SiLUImpl> {
 public:
  explicit SiLUImpl(ActivationOptions options = {}) : options(options) {}
  void reset() override {}
  at::Tensor forward(at::Tensor input);
  ActivationOptions options;
};
TORCH_MODULE(SiLU);

}  // namespace qfx::nn
