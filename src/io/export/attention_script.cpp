// nn::MultiheadAttention as TorchScript: a submodule of class
// `__torch__.torch.nn.modules.activation.MultiheadAttention` with Python's
// parameter and attribute names (embed_dim, num_heads, batch_first, ...),
// whose forward is PyTorch 1.13's MultiheadAttention.forward and
// F.multi_head_attention_forward, so the file re-imports as a scripted
// MultiheadAttention. The fast-path branch is written only for a module
// whose options allow it (MultiheadAttentionOptions::fast_path); the return
// is the output alone for one recorded so.

#include "module_script.h"

#include "qfx/ir/python_literals.h"
#include "qfx/nn/attention.h"

#include <cmath>

namespace qfx::io::detail {
namespace {

/// torch._native_multi_head_attention when 1.13's run-time conditions hold
/// (those the options decide are checked where the branch is written).
constexpr const char* kFastPath = R"(
    if is_batched and query is key and key is value and not self.training and attn_mask is None:
        if query.dtype == self.in_proj_weight.dtype and not torch.is_autocast_enabled():
            grad = torch.is_grad_enabled() and (query.requires_grad or self.in_proj_weight.requires_grad or BIAS_GRAD self.out_proj.weight.requires_grad)
            if not grad:
                mask_type: Optional[int] = None
                if key_padding_mask is not None:
                    mask_type = 1
                out, w = torch._native_multi_head_attention(query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, IN_BIAS, self.out_proj.weight, OUT_BIAS, key_padding_mask, need_weights, average_attn_weights, mask_type)
                RETURN_FAST
)";

/// F.multi_head_attention_forward and the transposes of batch_first around it.
constexpr const char* kSlowPath = R"(
    if self.batch_first and is_batched:
        if key is value:
            if query is key:
                query = key = value = query.transpose(1, 0)
            else:
                query, key = [x.transpose(1, 0) for x in (query, key)]
                value = key
        else:
            query, key, value = [x.transpose(1, 0) for x in (query, key, value)]
    if not is_batched:
        query = query.unsqueeze(1)
        key = key.unsqueeze(1)
        value = value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    head_dim = embed_dim // self.num_heads
PROJECTION
    if attn_mask is not None:
        if attn_mask.dtype == UINT8:
            attn_mask = attn_mask.to(BOOL)
        if attn_mask.dim() == 2:
            attn_mask = attn_mask.unsqueeze(0)
BIAS_KV
    q = q.contiguous().view(tgt_len, bsz * self.num_heads, head_dim).transpose(0, 1)
    k = k.contiguous().view(k.shape[0], bsz * self.num_heads, head_dim).transpose(0, 1)
    v = v.contiguous().view(v.shape[0], bsz * self.num_heads, head_dim).transpose(0, 1)
ZERO_ATTN
    src_len = k.size(1)
    if key_padding_mask is not None:
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len).expand(-1, self.num_heads, -1, -1).reshape(bsz * self.num_heads, 1, src_len)
        if attn_mask is None:
            attn_mask = key_padding_mask
        elif attn_mask.dtype == BOOL:
            attn_mask = attn_mask.logical_or(key_padding_mask)
        else:
            attn_mask = attn_mask.masked_fill(key_padding_mask, float("-inf"))
    if attn_mask is not None and attn_mask.dtype == BOOL:
        new_attn_mask = torch.zeros_like(attn_mask, dtype=q.dtype)
        new_attn_mask.masked_fill_(attn_mask, float("-inf"))
        attn_mask = new_attn_mask
    dropout_p = self.dropout if self.training else 0.0
    q_scaled = q / SQRT_HEAD_DIM
    if attn_mask is not None:
        attn_output_weights = torch.baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
    else:
        attn_output_weights = torch.bmm(q_scaled, k.transpose(-2, -1))
    attn_output_weights = torch.softmax(attn_output_weights, -1)
    if dropout_p > 0.0:
        attn_output_weights = torch.dropout(attn_output_weights, dropout_p, True)
    attn_output = torch.bmm(attn_output_weights, v).transpose(0, 1).contiguous().view(tgt_len * bsz, embed_dim)
    attn_output = torch.linear(attn_output, self.out_proj.weight, self.out_proj.bias)
    attn_output = attn_output.view(tgt_len, bsz, attn_output.size(1))
    weights: Optional[Tensor] = None
    if need_weights:
        per_head = attn_output_weights.view(bsz, self.num_heads, tgt_len, src_len)
        if average_attn_weights:
            per_head = per_head.sum(1) / self.num_heads
        if not is_batched:
            per_head = per_head.squeeze(0)
        weights = per_head
    if not is_batched:
        attn_output = attn_output.squeeze(1)
    elif self.batch_first:
        attn_output = attn_output.transpose(1, 0)
    RETURN_SLOW
)";

/// _in_projection_packed, or _in_projection with separate weights.
constexpr const char* kPackedProjection = R"(
    w = self.in_proj_weight
    if key is value:
        if query is key:
            qkv = torch.linear(query, w, IN_BIAS).chunk(3, -1)
            q, k, v = qkv[0], qkv[1], qkv[2]
        else:
            w_q, w_kv = w.split([embed_dim, embed_dim * 2])
            B_SPLIT_KV
            kv = torch.linear(key, w_kv, b_kv).chunk(2, -1)
            q, k, v = torch.linear(query, w_q, b_q), kv[0], kv[1]
    else:
        ws = w.chunk(3)
        B_SPLIT_3
        q, k, v = torch.linear(query, ws[0], b_q), torch.linear(key, ws[1], b_k), torch.linear(value, ws[2], b_v)
)";

constexpr const char* kSeparateProjection = R"(
    B_SPLIT_3
    q, k, v = torch.linear(query, self.q_proj_weight, b_q), torch.linear(key, self.k_proj_weight, b_k), torch.linear(value, self.v_proj_weight, b_v)
)";

constexpr const char* kBiasKv = R"(
    k = torch.cat([k, self.bias_k.repeat(1, bsz, 1)])
    v = torch.cat([v, self.bias_v.repeat(1, bsz, 1)])
    if attn_mask is not None:
        attn_mask = torch.constant_pad_nd(attn_mask, [0, 1])
    if key_padding_mask is not None:
        key_padding_mask = torch.constant_pad_nd(key_padding_mask, [0, 1])
)";

constexpr const char* kZeroAttn = R"(
    zero_attn_shape = [bsz * self.num_heads, 1, head_dim]
    k = torch.cat([k, torch.zeros(zero_attn_shape, dtype=k.dtype, device=k.device)], dim=1)
    v = torch.cat([v, torch.zeros(zero_attn_shape, dtype=v.dtype, device=v.device)], dim=1)
    if attn_mask is not None:
        attn_mask = torch.constant_pad_nd(attn_mask, [0, 1])
    if key_padding_mask is not None:
        key_padding_mask = torch.constant_pad_nd(key_padding_mask, [0, 1])
)";

/// True when the options let 1.13's fast path run (the run-time conditions
/// aside): what MultiheadAttention.forward checks of the module itself.
bool fast_path_possible(const nn::MultiheadAttentionImpl& m) {
  const nn::MultiheadAttentionOptions& o = m.options;
  return o.fast_path() && o.batch_first() && !o.add_bias_kv() && o.dropout() == 0.0 && !o.add_zero_attn() &&
         m.packed() && o.num_heads() % 2 == 0;
}

std::string forward_source(const nn::MultiheadAttentionImpl& m) {
  const nn::MultiheadAttentionOptions& o = m.options;
  std::string out = std::string(
                        "def forward(self, query: Tensor, key: Optional[Tensor] = None, value: Optional[Tensor] = "
                        "None, key_padding_mask: Optional[Tensor] = None, need_weights: bool = True, attn_mask: "
                        "Optional[Tensor] = None, average_attn_weights: bool = True)") +
                    (o.output_alone() ? " -> Tensor:\n" : " -> Tuple[Tensor, Optional[Tensor]]:\n") +
                    "    if key is None:\n        key = query\n"
                    "    if value is None:\n        value = key\n"
                    "    is_batched = query.dim() == 3\n";
  if (fast_path_possible(m)) out += kFastPath;
  out += kSlowPath;
  replace_all(out, "PROJECTION", m.packed() ? kPackedProjection : kSeparateProjection);
  replace_all(out, "BIAS_KV\n", o.add_bias_kv() ? kBiasKv + 1 : "");
  replace_all(out, "ZERO_ATTN\n", o.add_zero_attn() ? kZeroAttn + 1 : "");
  bool bias = m.in_proj_bias.defined();
  replace_all(out, "B_SPLIT_KV",
              bias ? "b_q, b_kv = self.in_proj_bias.split([embed_dim, embed_dim * 2])"
                   : "b_q: Optional[Tensor] = None\n            b_kv: Optional[Tensor] = None");
  replace_all(out, "        B_SPLIT_3",
              bias ? "        b_q, b_k, b_v = self.in_proj_bias.chunk(3)" : "        b_q = b_k = b_v = None");
  replace_all(out, "    B_SPLIT_3",
              bias ? "    b_q, b_k, b_v = self.in_proj_bias.chunk(3)" : "    b_q = b_k = b_v = None");
  replace_all(out, "UINT8", std::to_string(static_cast<int>(at::kByte)));  // dtypes as TorchScript's ints
  replace_all(out, "BOOL", std::to_string(static_cast<int>(at::kBool)));
  replace_all(out, "SQRT_HEAD_DIM",
              ir::python_float_repr(std::sqrt(static_cast<double>(o.embed_dim() / o.num_heads()))));
  replace_all(out, "IN_BIAS", bias ? "self.in_proj_bias" : "None");
  replace_all(out, "OUT_BIAS", m.out_proj->bias.defined() ? "self.out_proj.bias" : "None");
  replace_all(out, "BIAS_GRAD", bias ? "self.in_proj_bias.requires_grad or" : "");
  replace_all(out, "RETURN_FAST", o.output_alone() ? "return out" : "return out, w");
  replace_all(out, "RETURN_SLOW", o.output_alone() ? "return attn_output" : "return attn_output, weights");
  return out;
}

}  // namespace

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
}

void add_tensor(torch::jit::Module& module, const std::string& name, const at::Tensor& value) {
  if (value.defined()) {
    module.register_parameter(name, value, false);
  } else {
    module.register_attribute(name, c10::NoneType::get(), c10::IValue());
  }
}

torch::jit::Module attention_script_module(const nn::MultiheadAttentionImpl& m, const ScriptAttrs& attrs) {
  const nn::MultiheadAttentionOptions& o = m.options;
  torch::jit::Module out_proj = attrs.new_module("torch.nn.modules.linear.NonDynamicallyQuantizableLinear");
  mark_eval(out_proj);
  add_tensor(out_proj, "weight", m.out_proj->weight);
  add_tensor(out_proj, "bias", m.out_proj->bias);
  define_forward(out_proj,
                 "def forward(self, input: Tensor) -> Tensor:\n"
                 "    return torch.linear(input, self.weight, self.bias)\n");
  torch::jit::Module sub = attrs.new_module("torch.nn.modules.activation.MultiheadAttention");
  mark_eval(sub);
  for (const char* name : {"in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias"}) {
    add_tensor(sub, name, m.named_parameters(false).contains(name) ? m.named_parameters(false)[name] : at::Tensor());
  }
  add_tensor(sub, "bias_k", m.bias_k);
  add_tensor(sub, "bias_v", m.bias_v);
  sub.register_module("out_proj", out_proj);
  sub.register_attribute("embed_dim", c10::IntType::get(), o.embed_dim());
  sub.register_attribute("kdim", c10::IntType::get(), o.kdim());
  sub.register_attribute("vdim", c10::IntType::get(), o.vdim());
  sub.register_attribute("_qkv_same_embed_dim", c10::BoolType::get(), m.packed());
  sub.register_attribute("num_heads", c10::IntType::get(), o.num_heads());
  sub.register_attribute("dropout", c10::FloatType::get(), o.dropout());
  sub.register_attribute("batch_first", c10::BoolType::get(), o.batch_first());
  sub.register_attribute("head_dim", c10::IntType::get(), o.embed_dim() / o.num_heads());
  sub.register_attribute("add_zero_attn", c10::BoolType::get(), o.add_zero_attn());
  define_forward(sub, forward_source(m));
  return sub;
}

std::string attention_submodule(const nn::MultiheadAttentionImpl& m, const std::string& path, ScriptAttrs& attrs) {
  return attrs.add(path, attention_script_module(m, attrs)._ivalue());
}

}  // namespace qfx::io::detail
