#pragma once
// Batch-norm folding (fuse_conv_bn_weights) as loops over float32 values,
// giving the same values as the ATen ops PyTorch 1.13 runs, each operation
// rounded on its own (no fused multiply-add): per output channel
//
//   var_rsqrt = 1 / sqrt(running_var + float(eps))
//   weight'   = weight * (gamma * var_rsqrt)
//   bias'     = (bias - running_mean) * var_rsqrt * gamma + beta

#include <ATen/core/Tensor.h>

#include <optional>
#include <utility>

namespace qfx::nn::detail {

/// The folded conv weight and bias, when every defined tensor is a
/// contiguous float32 CPU tensor of the sizes folding expects (else nullopt,
/// and the ATen ops do it, raising their errors). `axis` is the weight's
/// output-channel dimension (0, or 1 for ConvTranspose).
std::optional<std::pair<at::Tensor, at::Tensor>> fold_conv_bn_loops(const at::Tensor& conv_w, const at::Tensor& conv_b,
                                                                    const at::Tensor& bn_rm, const at::Tensor& bn_rv,
                                                                    double bn_eps, const at::Tensor& bn_w,
                                                                    const at::Tensor& bn_b, int64_t axis);

}  // namespace qfx::nn::detail
