#pragma once
// The float computation of a weighted module with another weight: what
// reference modules (quantize-dequantized weight) and QAT modules
// (fake-quantized weight) run.

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <vector>

namespace qfx::nn::detail {

/// The op of `m` (Linear, ConvNd, ConvTransposeNd, Embedding, EmbeddingBag)
/// on `x` with weight `w` and the module's bias; `extra` holds
/// EmbeddingBag's offsets and per-sample weights (undefined: none).
at::Tensor weighted_forward(const torch::nn::Module& m, const at::Tensor& x, const at::Tensor& w,
                            const std::vector<at::Tensor>& extra = {});
/// As weighted_forward for Linear and ConvNd, with bias `b` instead of the module's.
at::Tensor weighted_forward_with_bias(const torch::nn::Module& m, const at::Tensor& x, const at::Tensor& w,
                                      const at::Tensor& b);

}  // namespace qfx::nn::detail
