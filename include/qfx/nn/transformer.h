#pragma once
/// \file
/// `torch.nn.TransformerEncoderLayer` and `torch.nn.TransformerEncoder` as
/// PyTorch 1.13's Python modules compute them (fast paths included), in the
/// LibTorch module idiom. FX keeps both whole (leaves) and float; qfx builds
/// them for a scripted encoder, whose forward branches on its input.

#include "qfx/nn/attention.h"

#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <string>

namespace qfx::nn {

/// The constructor arguments of `nn.TransformerEncoderLayer`.
struct TransformerEncoderLayerOptions {
  TransformerEncoderLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  TORCH_ARG(int64_t, d_model);
  TORCH_ARG(int64_t, nhead);
  TORCH_ARG(int64_t, dim_feedforward) = 2048;
  TORCH_ARG(double, dropout) = 0.1;
  /// "relu" or "gelu" (Python's activation_relu_or_gelu 1 and 2).
  TORCH_ARG(std::string, activation) = "relu";
  TORCH_ARG(double, layer_norm_eps) = 1e-5;
  TORCH_ARG(bool, batch_first) = false;
  TORCH_ARG(bool, norm_first) = false;
};

/// `torch.nn.TransformerEncoderLayer`: children self_attn, linear1, dropout,
/// linear2, norm1, norm2, dropout1, dropout2, as Python names them.
class TransformerEncoderLayerImpl : public torch::nn::Cloneable<TransformerEncoderLayerImpl> {
 public:
  explicit TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& options);
  void reset() override;
  /// Python's forward; `src` may be a nested tensor (TransformerEncoder's
  /// sparsity fast path), which only the fused op takes.
  at::Tensor forward(const at::Tensor& src, const at::Tensor& src_mask = {},
                     const at::Tensor& src_key_padding_mask = {});
  /// True when 1.13's forward would take torch._transformer_encoder_layer_fwd
  /// for this input and mask (grad mode and requires_grad included).
  bool takes_fast_path(const at::Tensor& src, const at::Tensor& src_mask) const;

  TransformerEncoderLayerOptions options;
  MultiheadAttention self_attn{nullptr};
  torch::nn::Linear linear1{nullptr}, linear2{nullptr};
  torch::nn::Dropout dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr};
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
};
TORCH_MODULE(TransformerEncoderLayer);

/// The constructor arguments of `nn.TransformerEncoder` besides its layer.
struct TransformerEncoderOptions {
  TransformerEncoderOptions(TransformerEncoderLayerOptions layer, int64_t num_layers)
      : layer_(std::move(layer)), num_layers_(num_layers) {}
  TORCH_ARG(TransformerEncoderLayerOptions, layer);
  TORCH_ARG(int64_t, num_layers);
  /// The final LayerNorm's eps; none: no final norm.
  TORCH_ARG(c10::optional<double>, norm_eps) = c10::nullopt;
  TORCH_ARG(bool, enable_nested_tensor) = true;
  TORCH_ARG(bool, mask_check) = true;
};

/// `torch.nn.TransformerEncoder`: children `layers` (a ModuleList of
/// TransformerEncoderLayer) and `norm` when it has one.
class TransformerEncoderImpl : public torch::nn::Cloneable<TransformerEncoderImpl> {
 public:
  explicit TransformerEncoderImpl(const TransformerEncoderOptions& options);
  void reset() override;
  at::Tensor forward(const at::Tensor& src, const at::Tensor& mask = {}, const at::Tensor& src_key_padding_mask = {});
  /// Layer `i`.
  TransformerEncoderLayerImpl& layer(size_t i) const;

  TransformerEncoderOptions options;
  torch::nn::ModuleList layers{nullptr};
  torch::nn::LayerNorm norm{nullptr};
};
TORCH_MODULE(TransformerEncoder);

}  // namespace qfx::nn
