// The ONNX forms of nn.MultiheadAttention and of a scripted
// nn.TransformerEncoder(Layer) kept whole (nn::MultiheadAttention,
// nn::TransformerEncoder(Layer), leaves as FX keeps them): PyTorch 1.13's
// F.multi_head_attention_forward in eval mode, op for op. Input projections,
// heads split into the batch dim, q / sqrt(head_dim), q k^T, softmax, the
// weighted sum of v, heads joined, the output projection; the attention
// weights averaged over heads (or per head) when asked for. An encoder layer
// is its self-attention, feed-forward block, residual adds and LayerNorms
// (after each block, or before with norm_first).

#include "onnx_rules.h"

#include "qfx/nn/attention.h"
#include "qfx/nn/transformer.h"

#include <ATen/ATen.h>

#include <array>
#include <cmath>

namespace qfx::io::onnx_export {
namespace {

/// The module's parameters and flags.
struct Attention {
  int64_t embed_dim = 0, num_heads = 0;
  bool batch_first = false;
  at::Tensor weight[3], bias[3];  ///< q, k, v projections (bias may be undefined)
  at::Tensor out_weight, out_bias;
};

/// Its q, k, v projections from the packed weight or the separate ones.
void set_projections(const Context& c, Attention& a, const at::Tensor& packed, const at::Tensor& packed_bias,
                     const std::array<at::Tensor, 3>& separate) {
  for (int64_t i = 0; i < 3; ++i) {
    a.weight[i] = packed.defined() ? packed.narrow(0, i * a.embed_dim, a.embed_dim) : separate[i];
    if (packed_bias.defined()) a.bias[i] = packed_bias.narrow(0, i * a.embed_dim, a.embed_dim);
    if (!a.weight[i].defined()) c.fail("MultiheadAttention without its projection weights");
  }
}

Attention read(const Context& c, const nn::MultiheadAttentionImpl& m) {
  const nn::MultiheadAttentionOptions& o = m.options;
  if (o.add_bias_kv() || o.add_zero_attn()) {
    c.fail("MultiheadAttention with add_bias_kv or add_zero_attn has no ONNX form here");
  }
  Attention a{o.embed_dim(), o.num_heads(), o.batch_first()};
  set_projections(c, a, m.in_proj_weight, m.in_proj_bias, {m.q_proj_weight, m.k_proj_weight, m.v_proj_weight});
  a.out_weight = m.out_proj->weight;
  a.out_bias = m.out_proj->bias;
  return a;
}

/// True when keyword or position `index` holds `expected` (or is absent and
/// the default is `expected`).
bool flag(const Context& c, size_t index, const char* keyword, bool fallback) {
  const Value& v = c.arg(index, keyword);
  return v.kind == Value::Kind::kNone ? fallback : c.int_of(v) != 0;
}

/// Attention's output [sequence, batch, embed] (batch first as the module
/// says) and its weights [batch x heads, target, source].
struct Attended {
  std::string out, weights;
};

/// F.multi_head_attention_forward of query, key and value (ONNX names).
Attended attend(const Context& c, const Attention& a, const std::vector<std::string>& qkv) {
  auto& g = c.g();
  const std::string hint = c.hint();
  int64_t head_dim = a.embed_dim / a.num_heads;
  auto ints = [&](const std::string& name, const std::vector<int64_t>& v) { return g.ints(hint + name, v); };
  auto transpose = [&](const std::string& x, std::vector<int64_t> perm, const std::string& name) {
    return g.op("Transpose", {x}, hint + name, {{"perm", std::move(perm)}});
  };
  // inputs as [sequence, batch, embed]; each projected and split into heads: [batch x heads, sequence, head_dim]
  std::string heads[3], query;
  const char* names[3] = {"_q", "_k", "_v"};
  for (size_t i = 0; i < 3; ++i) {
    std::string x = a.batch_first ? transpose(qkv[i], {1, 0, 2}, names[i] + std::string("_input")) : qkv[i];
    if (i == 0) query = x;
    std::string projected = c.tensor(linear(c, Value::tensor(x), a.weight[i], a.bias[i]));
    std::string split = g.op("Reshape", {projected, ints("_heads_shape", {0, -1, head_dim})}, hint + names[i]);
    heads[i] = transpose(split, {1, 0, 2}, names[i] + std::string("_heads"));
  }
  std::string scaled = g.op(
      "Div",
      {heads[0], g.initializer(hint + "_sqrt_head_dim", at::scalar_tensor(std::sqrt(double(head_dim)), at::kFloat))},
      hint + "_q_scaled");
  std::string scores = g.op("MatMul", {scaled, transpose(heads[1], {0, 2, 1}, "_k_t")}, hint + "_scores");
  std::string weights = g.op("Softmax", {scores}, hint + "_weights", {{"axis", int64_t{-1}}});
  std::string mixed = g.op("MatMul", {weights, heads[2]}, hint + "_mixed");
  std::string joined = g.op("Reshape", {transpose(mixed, {1, 0, 2}, "_joined_heads"), ints("_rows", {-1, a.embed_dim})},
                            hint + "_joined");
  std::string projected = c.tensor(linear(c, Value::tensor(joined), a.out_weight, a.out_bias));
  std::string out = g.op("Reshape", {projected, g.op("Shape", {query}, hint + "_shape")}, hint + "_output");
  if (a.batch_first) out = transpose(out, {1, 0, 2}, "_output_batch_first");
  return {out, weights};
}

/// Attention weights [batch x heads, target, source] as [batch, heads,
/// target, source], averaged over heads when `average`.
std::string weights_per_head(const Context& c, const Attention& a, const std::string& weights, bool average) {
  auto& g = c.g();
  const std::string hint = c.hint();
  auto ints = [&](const std::string& name, const std::vector<int64_t>& v) { return g.ints(hint + name, v); };
  std::string sizes = g.op("Shape", {weights}, hint + "_weights_shape");
  std::string target_source =
      g.op("Slice", {sizes, ints("_starts", {1}), ints("_ends", {3}), ints("_axes", {0})}, hint + "_target_source");
  std::string per_head = g.op("Reshape",
                              {weights, g.op("Concat", {ints("_batch_heads", {-1, a.num_heads}), target_source},
                                             hint + "_per_head_shape", {{"axis", int64_t{0}}})},
                              hint + "_per_head");
  if (!average) return per_head;
  std::string sum =
      g.op("ReduceSum", {per_head, ints("_head_axis", {1})}, hint + "_weights_sum", {{"keepdims", int64_t{0}}});
  return g.op("Div", {sum, g.initializer(hint + "_num_heads", at::scalar_tensor(double(a.num_heads), at::kFloat))},
              hint + "_average_weights");
}

/// A LayerNorm module applied to `x`.
std::string layer_norm_of(const Context& c, const torch::nn::LayerNormImpl& ln, const std::string& x) {
  return layer_norm(c, x, ln.options.normalized_shape(), ln.weight, ln.bias, ln.options.eps()).name;
}

/// A Linear module applied to `x`.
std::string linear_of(const Context& c, const torch::nn::LinearImpl& l, const std::string& x) {
  return c.tensor(linear(c, Value::tensor(x), l.weight, l.bias));
}

/// TransformerEncoderLayer.forward in eval mode (no masks) on `x`.
std::string encoder_layer(const Context& c, const nn::TransformerEncoderLayerImpl& layer, const std::string& x) {
  auto& g = c.g();
  const std::string hint = c.hint();
  Attention a = read(c, *layer.self_attn);
  auto self_attention = [&](const std::string& v) { return attend(c, a, {v, v, v}).out; };
  auto feed_forward = [&](const std::string& v) {
    std::string h = linear_of(c, *layer.linear1, v);
    h = layer.options.activation() == "relu" ? g.op("Relu", {h}, hint + "_relu") : gelu(c, h);
    return linear_of(c, *layer.linear2, h);
  };
  auto add = [&](const std::string& u, const std::string& v) { return g.op("Add", {u, v}, hint + "_residual"); };
  if (layer.options.norm_first()) {
    std::string y = add(x, self_attention(layer_norm_of(c, *layer.norm1, x)));
    return add(y, feed_forward(layer_norm_of(c, *layer.norm2, y)));
  }
  std::string y = layer_norm_of(c, *layer.norm1, add(x, self_attention(x)));
  return layer_norm_of(c, *layer.norm2, add(y, feed_forward(y)));
}

void no_masks(const Context& c, const std::vector<std::pair<size_t, const char*>>& masks) {
  for (const auto& [index, keyword] : masks) {
    if (c.arg(index, keyword).kind != Value::Kind::kNone) c.fail("attention with a mask has no ONNX form here");
  }
}

}  // namespace

Value multihead_attention(const Context& c, const torch::nn::Module& module) {
  const auto& m = dynamic_cast<const nn::MultiheadAttentionImpl&>(module);
  Attention a = read(c, m);
  if (c.rank_of_arg(0) != 3) c.fail("MultiheadAttention on an unbatched input has no ONNX form here");
  no_masks(c, {{3, "key_padding_mask"}, {5, "attn_mask"}});
  std::vector<std::string> qkv;
  for (size_t i = 0; i < 3; ++i) {  // a trace of self-attention takes the query alone
    qkv.push_back(c.tensor(c.arg(i).kind == Value::Kind::kNone ? c.arg(0) : c.arg(i)));
  }
  Attended attended = attend(c, a, qkv);
  if (m.options.output_alone()) return Value::tensor(attended.out);  // a trace that keeps only the output
  if (!flag(c, 4, "need_weights", true)) return Value::list({Value::tensor(attended.out), Value{}});
  bool average = flag(c, 6, "average_attn_weights", true);
  return Value::list({Value::tensor(attended.out), Value::tensor(weights_per_head(c, a, attended.weights, average))});
}

Value transformer_encoder(const Context& c, const torch::nn::Module& module) {
  if (c.rank_of_arg(0) != 3) c.fail("a Transformer encoder on an unbatched input has no ONNX form here");
  no_masks(c, {{1, "mask"}, {2, "src_key_padding_mask"}, {1, "src_mask"}});
  std::string x = c.tensor(c.arg(0));
  if (auto* layer = dynamic_cast<const nn::TransformerEncoderLayerImpl*>(&module)) {
    return Value::tensor(encoder_layer(c, *layer, x));
  }
  const auto& encoder = dynamic_cast<const nn::TransformerEncoderImpl&>(module);
  for (size_t i = 0; i < encoder.layers->size(); ++i) x = encoder_layer(c, encoder.layer(i), x);
  if (encoder.norm) x = layer_norm_of(c, *encoder.norm, x);
  return Value::tensor(x);
}

}  // namespace qfx::io::onnx_export
