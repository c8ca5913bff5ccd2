// nn.TransformerEncoderLayer and nn.TransformerEncoder: PyTorch 1.13's
// forwards (torch/nn/modules/transformer.py), their fast-path checks
// included, op for op.

#include "qfx/nn/transformer.h"

#include <ATen/autocast_mode.h>
#include <c10/core/GradMode.h>

#include <vector>

namespace qfx::nn {
namespace {

void check_key_padding_mask(const at::Tensor& mask) {
  TORCH_CHECK(!mask.defined() || mask.scalar_type() == at::kBool || mask.is_floating_point(),
              "TransformerEncoder: only bool and floating types of key_padding_mask are supported");
}

/// What the fast paths check of a layer itself (Python's first elif chain,
/// the input's rank and masks aside).
bool layer_allows_fast_path(const TransformerEncoderLayerImpl& l) {
  return !l.is_training() && l.self_attn->options.batch_first() && l.self_attn->packed() &&
         l.norm1->options.eps() == l.norm2->options.eps() && l.self_attn->options.num_heads() % 2 == 0 &&
         !at::autocast::is_enabled();
}

/// The tensors whose requires_grad the fast paths check, with `src`.
std::vector<at::Tensor> fast_path_tensors(const TransformerEncoderLayerImpl& l, const at::Tensor& src) {
  return {src,
          l.self_attn->in_proj_weight,
          l.self_attn->in_proj_bias,
          l.self_attn->out_proj->weight,
          l.self_attn->out_proj->bias,
          l.norm1->weight,
          l.norm1->bias,
          l.norm2->weight,
          l.norm2->bias,
          l.linear1->weight,
          l.linear1->bias,
          l.linear2->weight,
          l.linear2->bias};
}

bool grad_blocks_fast_path(const std::vector<at::Tensor>& tensors) {
  if (!c10::GradMode::is_enabled()) return false;
  for (const at::Tensor& t : tensors) {
    if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

}  // namespace

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& options)
    : options(options) {
  TORCH_CHECK(options.activation() == "relu" || options.activation() == "gelu",
              "TransformerEncoderLayer: activation is relu or gelu, not ", options.activation());
  reset();
}

void TransformerEncoderLayerImpl::reset() {
  const TransformerEncoderLayerOptions& o = options;
  self_attn = register_module(
      "self_attn",
      MultiheadAttention(
          MultiheadAttentionOptions(o.d_model(), o.nhead()).dropout(o.dropout()).batch_first(o.batch_first())));
  linear1 = register_module("linear1", torch::nn::Linear(o.d_model(), o.dim_feedforward()));
  dropout = register_module("dropout", torch::nn::Dropout(o.dropout()));
  linear2 = register_module("linear2", torch::nn::Linear(o.dim_feedforward(), o.d_model()));
  auto norm_options = torch::nn::LayerNormOptions({o.d_model()}).eps(o.layer_norm_eps());
  norm1 = register_module("norm1", torch::nn::LayerNorm(norm_options));
  norm2 = register_module("norm2", torch::nn::LayerNorm(norm_options));
  dropout1 = register_module("dropout1", torch::nn::Dropout(o.dropout()));
  dropout2 = register_module("dropout2", torch::nn::Dropout(o.dropout()));
}

bool TransformerEncoderLayerImpl::takes_fast_path(const at::Tensor& src, const at::Tensor& src_mask) const {
  if (src.dim() != 3 || !layer_allows_fast_path(*this) || src_mask.defined()) return false;
  return !grad_blocks_fast_path(fast_path_tensors(*this, src));
}

at::Tensor TransformerEncoderLayerImpl::forward(const at::Tensor& src, const at::Tensor& src_mask,
                                                const at::Tensor& src_key_padding_mask) {
  check_key_padding_mask(src_key_padding_mask);
  bool nested_with_mask = src.is_nested() && src_key_padding_mask.defined();
  if (!nested_with_mask && takes_fast_path(src, src_mask)) {
    const MultiheadAttentionImpl& a = *self_attn;
    c10::optional<int64_t> mask_type;
    if (src_key_padding_mask.defined()) mask_type = 1;
    return at::_transformer_encoder_layer_fwd(
        src, a.options.embed_dim(), a.options.num_heads(), a.in_proj_weight, a.in_proj_bias, a.out_proj->weight,
        a.out_proj->bias, options.activation() == "gelu", options.norm_first(), norm1->options.eps(), norm1->weight,
        norm1->bias, norm2->weight, norm2->bias, linear1->weight, linear1->bias, linear2->weight, linear2->bias,
        src_key_padding_mask.defined() ? c10::optional<at::Tensor>(src_key_padding_mask) : c10::nullopt, mask_type);
  }
  auto self_attention = [&](const at::Tensor& x) {
    AttentionInputs in;
    in.query = in.key = in.value = x;
    in.key_padding_mask = src_key_padding_mask;
    in.attn_mask = src_mask;
    in.need_weights = false;
    return dropout1->forward(self_attn->forward(in).toTupleRef().elements()[0].toTensor());
  };
  auto feed_forward = [&](const at::Tensor& x) {
    at::Tensor h = linear1->forward(x);
    h = options.activation() == "gelu" ? at::gelu(h) : at::relu(h);
    return dropout2->forward(linear2->forward(dropout->forward(h)));
  };
  at::Tensor x = src;
  if (options.norm_first()) {
    x = x + self_attention(norm1->forward(x));
    return x + feed_forward(norm2->forward(x));
  }
  x = norm1->forward(x + self_attention(x));
  return norm2->forward(x + feed_forward(x));
}

TransformerEncoderImpl::TransformerEncoderImpl(const TransformerEncoderOptions& options) : options(options) {
  TORCH_CHECK(options.num_layers() > 0, "TransformerEncoder: num_layers must be positive");
  reset();
}

void TransformerEncoderImpl::reset() {
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < options.num_layers(); ++i) layers->push_back(TransformerEncoderLayer(options.layer()));
  if (options.norm_eps()) {
    norm = register_module(
        "norm",
        torch::nn::LayerNorm(torch::nn::LayerNormOptions({options.layer().d_model()}).eps(*options.norm_eps())));
  }
}

TransformerEncoderLayerImpl& TransformerEncoderImpl::layer(size_t i) const {
  return *layers->ptr<TransformerEncoderLayerImpl>(i);
}

at::Tensor TransformerEncoderImpl::forward(const at::Tensor& src, const at::Tensor& mask,
                                           const at::Tensor& src_key_padding_mask) {
  check_key_padding_mask(src_key_padding_mask);
  const TransformerEncoderLayerImpl& first = layer(0);
  // the sparsity fast path: padded positions dropped as a nested tensor through the layers' fused op
  bool convert_to_nested =
      !first.options.norm_first() && layer_allows_fast_path(first) && src.dim() == 3 &&
      options.enable_nested_tensor() && src_key_padding_mask.defined() &&
      (!options.mask_check() || at::_nested_tensor_from_mask_left_aligned(src, src_key_padding_mask.logical_not())) &&
      !src.is_nested() && !mask.defined() && !grad_blocks_fast_path(fast_path_tensors(first, src));
  at::Tensor output = src, key_padding_mask = src_key_padding_mask;
  if (convert_to_nested) {
    output = at::_nested_tensor_from_mask(output, src_key_padding_mask.logical_not(), /*mask_check=*/false);
    key_padding_mask = at::Tensor();
  }
  for (size_t i = 0; i < layers->size(); ++i) output = layer(i).forward(output, mask, key_padding_mask);
  if (convert_to_nested) output = output.to_padded_tensor(0.0);
  if (norm) output = norm->forward(output);
  return output;
}

}  // namespace qfx::nn
