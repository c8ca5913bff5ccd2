#pragma once
/// \file
/// `torch.nn.MultiheadAttention` as PyTorch 1.13's Python module computes it,
/// in the LibTorch module idiom. LibTorch's own `torch::nn::MultiheadAttention`
/// is not used: it scales q by `1 / sqrt(head_dim)` where Python divides by
/// `sqrt(head_dim)`, tests self-attention by value instead of identity, and
/// has neither `batch_first` nor the inference fast path, so its numbers
/// differ from Python's. FX keeps the module whole (a leaf) and float.

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <torch/arg.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>

#include <ostream>
#include <vector>

namespace qfx::nn {

/// `torch.nn.modules.linear.NonDynamicallyQuantizableLinear`: the attention's
/// output projection, a Linear that dynamic quantization leaves alone.
class NonDynamicallyQuantizableLinearImpl : public torch::nn::Cloneable<NonDynamicallyQuantizableLinearImpl> {
 public:
  NonDynamicallyQuantizableLinearImpl(int64_t in_features, int64_t out_features, bool bias);
  void reset() override;
  at::Tensor forward(const at::Tensor& input) { return at::linear(input, weight, bias); }
  int64_t in_features, out_features;
  at::Tensor weight, bias;  ///< bias undefined when built with bias=false
};
TORCH_MODULE(NonDynamicallyQuantizableLinear);

/// The constructor arguments of `nn.MultiheadAttention`, and two settings
/// that say how an imported module was recorded.
struct MultiheadAttentionOptions {
  MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads)
      : embed_dim_(embed_dim), num_heads_(num_heads), kdim_(embed_dim), vdim_(embed_dim) {}
  TORCH_ARG(int64_t, embed_dim);
  TORCH_ARG(int64_t, num_heads);
  TORCH_ARG(double, dropout) = 0.0;
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(bool, add_bias_kv) = false;
  TORCH_ARG(bool, add_zero_attn) = false;
  TORCH_ARG(int64_t, kdim);
  TORCH_ARG(int64_t, vdim);
  TORCH_ARG(bool, batch_first) = false;
  /// Take `torch._native_multi_head_attention` when 1.13's conditions hold
  /// (eval, batch first, self-attention, no masks, no grad, ...), as the
  /// Python and scripted module do. False: always the general computation
  /// (what a trace recorded).
  TORCH_ARG(bool, fast_path) = true;
  /// forward returns the attention output alone, not `(output, weights)`:
  /// a trace whose caller reads only the output records the module so.
  TORCH_ARG(bool, output_alone) = false;
};

/// The inputs of one call, as Python's forward takes them. `key` and `value`
/// undefined: the query (a traced self-attention takes it alone).
struct AttentionInputs {
  at::Tensor query, key, value, key_padding_mask, attn_mask;
  bool need_weights = true, average_attn_weights = true;
};

/// `torch.nn.MultiheadAttention`. Parameters as Python names them:
/// `in_proj_weight` (or `q_proj_weight`, `k_proj_weight`, `v_proj_weight`
/// when kdim or vdim differ from embed_dim), `in_proj_bias`, `bias_k`,
/// `bias_v`, and the child `out_proj`.
class MultiheadAttentionImpl : public torch::nn::Cloneable<MultiheadAttentionImpl> {
 public:
  explicit MultiheadAttentionImpl(const MultiheadAttentionOptions& options);
  void reset() override;
  /// Python's forward: `(output, weights)` (weights undefined when not
  /// needed), or the output alone with `output_alone`.
  c10::IValue forward(const AttentionInputs& inputs);
  /// The inputs as FX passes them (query, key, value, key_padding_mask,
  /// need_weights, attn_mask, average_attn_weights; trailing ones may be
  /// left out, and key and value too for a traced self-attention).
  static AttentionInputs inputs_of(const std::vector<c10::IValue>& args);
  /// True when q, k and v are projected by one packed weight.
  bool packed() const { return options.kdim() == options.embed_dim() && options.vdim() == options.embed_dim(); }
  void pretty_print(std::ostream& stream) const override;

  MultiheadAttentionOptions options;
  at::Tensor in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, in_proj_bias, bias_k, bias_v;
  NonDynamicallyQuantizableLinear out_proj{nullptr};
};
TORCH_MODULE(MultiheadAttention);

}  // namespace qfx::nn
