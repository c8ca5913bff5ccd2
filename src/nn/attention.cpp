// nn.MultiheadAttention: PyTorch 1.13's MultiheadAttention.forward and
// F.multi_head_attention_forward, op for op (torch/nn/modules/activation.py,
// torch/nn/functional.py), so its numbers are Python's.

#include "qfx/nn/attention.h"

#include <ATen/autocast_mode.h>
#include <c10/core/GradMode.h>
#include <torch/nn/init.h>

#include <cmath>
#include <string>
#include <tuple>

namespace qfx::nn {
namespace {

at::Tensor empty(at::IntArrayRef shape) { return at::empty(shape, at::kFloat); }

/// 1.13's _mha_shape_check: whether the query is batched (3-D), with its
/// checks on the other inputs' ranks.
bool is_batched(const AttentionInputs& in, const at::Tensor& key, const at::Tensor& value) {
  int64_t rank = in.query.dim();
  TORCH_CHECK(rank == 2 || rank == 3, "MultiheadAttention: query should be unbatched 2D or batched 3D tensor but ",
              "received ", rank, "-D query tensor");
  TORCH_CHECK(key.dim() == rank && value.dim() == rank, "MultiheadAttention: expected key and value to be ", rank,
              "-D like the query, found ", key.dim(), "-D and ", value.dim(), "-D tensors");
  if (in.key_padding_mask.defined()) {
    TORCH_CHECK(in.key_padding_mask.dim() == rank - 1, "MultiheadAttention: expected key_padding_mask to be ", rank - 1,
                "-D, found ", in.key_padding_mask.dim(), "-D");
  }
  if (in.attn_mask.defined()) {
    TORCH_CHECK(in.attn_mask.dim() == 2 || in.attn_mask.dim() == 3,
                "MultiheadAttention: expected attn_mask to be 2-D or 3-D, found ", in.attn_mask.dim(), "-D");
  }
  return rank == 3;
}

/// MultiheadAttention.forward's why_not_fast_path chain: true when every
/// condition for torch._native_multi_head_attention holds.
bool takes_fast_path(const MultiheadAttentionImpl& m, const AttentionInputs& in, const at::Tensor& key,
                     const at::Tensor& value, bool batched) {
  const MultiheadAttentionOptions& o = m.options;
  const at::Tensor& q = in.query;
  if (!o.fast_path() || !batched || !q.is_same(key) || !key.is_same(value)) return false;
  if (m.in_proj_bias.defined() && q.scalar_type() != m.in_proj_bias.scalar_type()) return false;
  if (m.in_proj_weight.defined() && q.scalar_type() != m.in_proj_weight.scalar_type()) return false;
  if (m.is_training() || !o.batch_first() || m.bias_k.defined() || m.bias_v.defined() || o.dropout() != 0.0 ||
      o.add_zero_attn() || !m.packed() || in.attn_mask.defined() || o.num_heads() % 2 == 1 ||
      at::autocast::is_enabled()) {
    return false;
  }
  const at::Tensor tensors[] = {q, m.in_proj_weight, m.in_proj_bias, m.out_proj->weight, m.out_proj->bias};
  for (const at::Tensor& t : tensors) {
    if (t.defined() && !t.is_cpu()) return false;
    if (t.defined() && t.requires_grad() && c10::GradMode::is_enabled()) return false;
  }
  return true;
}

/// _in_projection_packed / _in_projection: q, k and v projected, the packed
/// weight split as 1.13 splits it for self-, key-value-shared and general
/// attention.
std::tuple<at::Tensor, at::Tensor, at::Tensor> project(const MultiheadAttentionImpl& m, const at::Tensor& query,
                                                       const at::Tensor& key, const at::Tensor& value) {
  const at::Tensor& b = m.in_proj_bias;
  if (!m.packed()) {
    std::vector<at::Tensor> bias = b.defined() ? b.chunk(3) : std::vector<at::Tensor>(3);
    return {at::linear(query, m.q_proj_weight, bias[0]), at::linear(key, m.k_proj_weight, bias[1]),
            at::linear(value, m.v_proj_weight, bias[2])};
  }
  const at::Tensor& w = m.in_proj_weight;
  int64_t e = query.size(-1);
  if (key.is_same(value) && query.is_same(key)) {
    std::vector<at::Tensor> qkv = at::linear(query, w, b).chunk(3, -1);
    return {qkv[0], qkv[1], qkv[2]};
  }
  if (key.is_same(value)) {
    std::vector<at::Tensor> w_split = w.split_with_sizes({e, e * 2});
    std::vector<at::Tensor> b_split = b.defined() ? b.split_with_sizes({e, e * 2}) : std::vector<at::Tensor>(2);
    std::vector<at::Tensor> kv = at::linear(key, w_split[1], b_split[1]).chunk(2, -1);
    return {at::linear(query, w_split[0], b_split[0]), kv[0], kv[1]};
  }
  std::vector<at::Tensor> w_split = w.chunk(3);
  std::vector<at::Tensor> b_split = b.defined() ? b.chunk(3) : std::vector<at::Tensor>(3);
  return {at::linear(query, w_split[0], b_split[0]), at::linear(key, w_split[1], b_split[1]),
          at::linear(value, w_split[2], b_split[2])};
}

/// attn_mask as F.multi_head_attention_forward takes it: bool (from uint8)
/// or float, 3-D [bsz * heads, tgt, src].
at::Tensor prepared_attn_mask(at::Tensor mask, int64_t tgt_len, int64_t src_len, int64_t batch_heads) {
  if (!mask.defined()) return mask;
  if (mask.scalar_type() == at::kByte) mask = mask.to(at::kBool);
  TORCH_CHECK(mask.is_floating_point() || mask.scalar_type() == at::kBool,
              "MultiheadAttention: only float, byte, and bool types are supported for attn_mask, not ",
              mask.scalar_type());
  if (mask.dim() == 2) {
    TORCH_CHECK(mask.size(0) == tgt_len && mask.size(1) == src_len, "MultiheadAttention: the shape of the 2D ",
                "attn_mask is ", mask.sizes(), ", but should be (", tgt_len, ", ", src_len, ")");
    return mask.unsqueeze(0);
  }
  TORCH_CHECK(mask.size(0) == batch_heads && mask.size(1) == tgt_len && mask.size(2) == src_len,
              "MultiheadAttention: the shape of the 3D attn_mask is ", mask.sizes(), ", but should be (", batch_heads,
              ", ", tgt_len, ", ", src_len, ")");
  return mask;
}

/// Pads the last dim of a mask with one zero (F.pad(mask, (0, 1))).
at::Tensor pad_one(const at::Tensor& mask) { return mask.defined() ? at::constant_pad_nd(mask, {0, 1}) : mask; }

/// [len, bsz, embed] -> [bsz * heads, len, head_dim].
at::Tensor split_heads(const at::Tensor& x, int64_t bsz, const MultiheadAttentionOptions& o) {
  int64_t head_dim = o.embed_dim() / o.num_heads();
  return x.contiguous().view({x.size(0), bsz * o.num_heads(), head_dim}).transpose(0, 1);
}

/// F.multi_head_attention_forward on [len, bsz, embed] inputs (batch
/// second, already batched): the output and, when needed, the weights.
std::pair<at::Tensor, at::Tensor> attention_forward(const MultiheadAttentionImpl& m, const at::Tensor& query,
                                                    const at::Tensor& key, const at::Tensor& value,
                                                    at::Tensor key_padding_mask, at::Tensor attn_mask,
                                                    const AttentionInputs& in) {
  const MultiheadAttentionOptions& o = m.options;
  int64_t tgt_len = query.size(0), bsz = query.size(1), embed_dim = query.size(2), src_len = key.size(0);
  TORCH_CHECK(embed_dim == o.embed_dim(), "MultiheadAttention: was expecting embedding dimension of ", o.embed_dim(),
              ", but got ", embed_dim);
  auto [q, k, v] = project(m, query, key, value);
  attn_mask = prepared_attn_mask(attn_mask, tgt_len, src_len, bsz * o.num_heads());
  if (m.bias_k.defined() && m.bias_v.defined()) {
    k = at::cat({k, m.bias_k.repeat({1, bsz, 1})});
    v = at::cat({v, m.bias_v.repeat({1, bsz, 1})});
    attn_mask = pad_one(attn_mask);
    key_padding_mask = pad_one(key_padding_mask);
  }
  q = split_heads(q, bsz, o);
  k = split_heads(k, bsz, o);
  v = split_heads(v, bsz, o);
  if (o.add_zero_attn()) {
    std::vector<int64_t> zeros_shape{bsz * o.num_heads(), 1, o.embed_dim() / o.num_heads()};
    k = at::cat({k, at::zeros(zeros_shape, k.options())}, 1);
    v = at::cat({v, at::zeros(zeros_shape, v.options())}, 1);
    attn_mask = pad_one(attn_mask);
    key_padding_mask = pad_one(key_padding_mask);
  }
  src_len = k.size(1);
  if (key_padding_mask.defined()) {
    TORCH_CHECK(key_padding_mask.size(0) == bsz && key_padding_mask.size(1) == src_len,
                "MultiheadAttention: expecting key_padding_mask shape of (", bsz, ", ", src_len, "), but got ",
                key_padding_mask.sizes());
    key_padding_mask = key_padding_mask.view({bsz, 1, 1, src_len})
                           .expand({-1, o.num_heads(), -1, -1})
                           .reshape({bsz * o.num_heads(), 1, src_len});
    if (!attn_mask.defined()) {
      attn_mask = key_padding_mask;
    } else if (attn_mask.scalar_type() == at::kBool) {
      attn_mask = attn_mask.logical_or(key_padding_mask);
    } else {
      attn_mask = attn_mask.masked_fill(key_padding_mask, -INFINITY);
    }
  }
  if (attn_mask.defined() && attn_mask.scalar_type() == at::kBool) {
    at::Tensor float_mask = at::zeros_like(attn_mask, q.scalar_type());
    float_mask.masked_fill_(attn_mask, -INFINITY);
    attn_mask = float_mask;
  }
  double dropout_p = m.is_training() ? o.dropout() : 0.0;
  at::Tensor q_scaled = q / std::sqrt(static_cast<double>(q.size(2)));
  at::Tensor weights = attn_mask.defined() ? at::baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
                                           : at::bmm(q_scaled, k.transpose(-2, -1));
  weights = at::softmax(weights, -1);
  if (dropout_p > 0.0) weights = at::dropout(weights, dropout_p, true);
  at::Tensor out = at::bmm(weights, v).transpose(0, 1).contiguous().view({tgt_len * bsz, embed_dim});
  out = at::linear(out, m.out_proj->weight, m.out_proj->bias);
  out = out.view({tgt_len, bsz, out.size(1)});
  if (!in.need_weights) return {out, at::Tensor()};
  weights = weights.view({bsz, o.num_heads(), tgt_len, src_len});
  if (in.average_attn_weights) weights = weights.sum(1) / o.num_heads();
  return {out, weights};
}

/// `x` as a Tensor argument: None is undefined.
at::Tensor optional_tensor(const c10::IValue& x, const char* name) {
  if (x.isNone()) return {};
  TORCH_CHECK(x.isTensor(), "MultiheadAttention: ", name, " is a Tensor or None, got a ", x.tagKind());
  return x.toTensor();
}

}  // namespace

NonDynamicallyQuantizableLinearImpl::NonDynamicallyQuantizableLinearImpl(int64_t in_features, int64_t out_features,
                                                                         bool bias)
    : in_features(in_features), out_features(out_features), bias(bias ? empty({out_features}) : at::Tensor()) {
  reset();
}

void NonDynamicallyQuantizableLinearImpl::reset() {
  bool with_bias = bias.defined();
  weight = register_parameter("weight", empty({out_features, in_features}));
  bias = with_bias ? register_parameter("bias", at::zeros({out_features})) : at::Tensor();
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
}

MultiheadAttentionImpl::MultiheadAttentionImpl(const MultiheadAttentionOptions& options) : options(options) {
  TORCH_CHECK(options.num_heads() > 0 && options.embed_dim() % options.num_heads() == 0,
              "MultiheadAttention: embed_dim must be divisible by num_heads");
  reset();
}

void MultiheadAttentionImpl::reset() {
  const MultiheadAttentionOptions& o = options;
  int64_t e = o.embed_dim();
  if (packed()) {
    in_proj_weight = register_parameter("in_proj_weight", empty({3 * e, e}));
    torch::nn::init::xavier_uniform_(in_proj_weight);
  } else {
    q_proj_weight = register_parameter("q_proj_weight", empty({e, e}));
    k_proj_weight = register_parameter("k_proj_weight", empty({e, o.kdim()}));
    v_proj_weight = register_parameter("v_proj_weight", empty({e, o.vdim()}));
    for (at::Tensor* w : {&q_proj_weight, &k_proj_weight, &v_proj_weight}) torch::nn::init::xavier_uniform_(*w);
  }
  if (o.bias()) in_proj_bias = register_parameter("in_proj_bias", at::zeros({3 * e}));
  out_proj = register_module("out_proj", NonDynamicallyQuantizableLinear(e, e, o.bias()));
  if (o.add_bias_kv()) {
    bias_k = register_parameter("bias_k", empty({1, 1, e}));
    bias_v = register_parameter("bias_v", empty({1, 1, e}));
    torch::nn::init::xavier_normal_(bias_k);
    torch::nn::init::xavier_normal_(bias_v);
  }
}

AttentionInputs MultiheadAttentionImpl::inputs_of(const std::vector<c10::IValue>& args) {
  TORCH_CHECK(!args.empty() && args.size() <= 7, "MultiheadAttention takes 1 to 7 inputs, got ", args.size());
  TORCH_CHECK(args.size() != 2, "MultiheadAttention takes a value with its key");
  AttentionInputs in;
  in.query = optional_tensor(args[0], "query");
  TORCH_CHECK(in.query.defined(), "MultiheadAttention: the query is None");
  if (args.size() > 1) in.key = optional_tensor(args[1], "key");
  if (args.size() > 2) in.value = optional_tensor(args[2], "value");
  if (args.size() > 3) in.key_padding_mask = optional_tensor(args[3], "key_padding_mask");
  if (args.size() > 4) in.need_weights = args[4].toBool();
  if (args.size() > 5) in.attn_mask = optional_tensor(args[5], "attn_mask");
  if (args.size() > 6) in.average_attn_weights = args[6].toBool();
  return in;
}

c10::IValue MultiheadAttentionImpl::forward(const AttentionInputs& in) {
  at::Tensor key = in.key.defined() ? in.key : in.query;
  at::Tensor value = in.value.defined() ? in.value : key;
  bool batched = is_batched(in, key, value);
  if (in.key_padding_mask.defined()) {
    TORCH_CHECK(in.key_padding_mask.scalar_type() == at::kBool || in.key_padding_mask.is_floating_point(),
                "MultiheadAttention: only bool and floating types of key_padding_mask are supported");
  }
  at::Tensor out, weights;
  if (takes_fast_path(*this, in, key, value, batched)) {
    std::tie(out, weights) = at::_native_multi_head_attention(
        in.query, key, value, options.embed_dim(), options.num_heads(), in_proj_weight, in_proj_bias, out_proj->weight,
        out_proj->bias, in.key_padding_mask, in.need_weights, in.average_attn_weights,
        in.key_padding_mask.defined() ? c10::optional<int64_t>(1) : c10::nullopt);
  } else {
    at::Tensor query = in.query, key_padding_mask = in.key_padding_mask;
    if (!batched) {  // a batch of one, each input unsqueezed on its own (no longer the same tensor)
      query = query.unsqueeze(1);
      key = key.unsqueeze(1);
      value = value.unsqueeze(1);
      if (key_padding_mask.defined()) key_padding_mask = key_padding_mask.unsqueeze(0);
    } else if (options.batch_first()) {  // keeping which of q, k, v are the same tensor
      bool kv = key.is_same(value), qk = query.is_same(key);
      query = query.transpose(1, 0);
      key = kv && qk ? query : key.transpose(1, 0);
      value = kv ? key : value.transpose(1, 0);
    }
    std::tie(out, weights) = attention_forward(*this, query, key, value, key_padding_mask, in.attn_mask, in);
    if (!batched) {
      out = out.squeeze(1);
      if (weights.defined()) weights = weights.squeeze(0);
    } else if (options.batch_first()) {
      out = out.transpose(1, 0);
    }
  }
  if (options.output_alone()) return out;
  return c10::ivalue::Tuple::create(out, weights.defined() ? c10::IValue(weights) : c10::IValue());
}

void MultiheadAttentionImpl::pretty_print(std::ostream& stream) const {
  stream << "qfx::nn::MultiheadAttention(embed_dim=" << options.embed_dim() << ", num_heads=" << options.num_heads()
         << ")";
}

}  // namespace qfx::nn
