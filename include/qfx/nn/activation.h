#pragma once
/// \file
/// Float activation modules that LibTorch's `torch::nn` lacks (Hardswish,
/// Hardsigmoid) or has without PyTorch's `inplace` flag (SiLU). In the
/// LibTorch module idiom; registered as `torch.nn.Hardswish`, ... .

#include <ATen/ATen.h>
#include <torch/arg.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>

namespace qfx::nn {

/// Options of the element-wise activations below.
struct ActivationOptions {
  /// Compute in place, as PyTorch's `inplace=True`.
  TORCH_ARG(bool, inplace) = false;
};

/// An element-wise activation computed by one ATen op (and its in-place form).
template <at::Tensor (*Op)(const at::Tensor&), at::Tensor& (*InplaceOp)(at::Tensor&)>
class ActivationImpl : public torch::nn::Cloneable<ActivationImpl<Op, InplaceOp>> {
 public:
  explicit ActivationImpl(ActivationOptions options = {}) : options(options) {}
  void reset() override {}
  at::Tensor forward(at::Tensor input) { return options.inplace() ? InplaceOp(input) : Op(input); }
  /// The activation into a new tensor, whatever `inplace` says.
  static at::Tensor out_of_place(const at::Tensor& input) { return Op(input); }
  ActivationOptions options;
};

/// `torch.nn.Hardswish`: x * relu6(x + 3) / 6.
using HardswishImpl = ActivationImpl<at::hardswish, at::hardswish_>;
TORCH_MODULE(Hardswish);

/// `torch.nn.Hardsigmoid`: relu6(x + 3) / 6.
using HardsigmoidImpl = ActivationImpl<at::hardsigmoid, at::hardsigmoid_>;
TORCH_MODULE(Hardsigmoid);

/// `torch.nn.SiLU`: x * sigmoid(x).
using SiLUImpl = ActivationImpl<at::silu, at::silu_>;
TORCH_MODULE(SiLU);

}  // namespace qfx::nn
