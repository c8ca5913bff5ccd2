// nn::TransformerEncoder(Layer) as TorchScript: modules of Python's classes
// (`torch.nn.modules.transformer.TransformerEncoder`, its `layers` list of
// `TransformerEncoderLayer`s with self_attn, linear1, dropout, linear2,
// norm1, norm2, and the final norm) with the attributes a scripted 1.13
// module has (activation_relu_or_gelu, norm_first, enable_nested_tensor,
// mask_check, eps, p), so the file re-imports as a scripted encoder. The
// forwards are 1.13's in eval mode: the fused op or the nested-tensor path
// where the options allow them and the run-time checks pass, else the
// blocks one by one (dropout is the identity in eval mode).

#include "module_script.h"

#include "qfx/ir/python_literals.h"
#include "qfx/nn/transformer.h"

namespace qfx::io::detail {
namespace {

std::string python_bool(bool v) { return v ? "True" : "False"; }

/// A module of class `python_class` in eval mode.
torch::jit::Module eval_module(const ScriptAttrs& attrs, const std::string& python_class) {
  torch::jit::Module m = attrs.new_module(python_class);
  mark_eval(m);
  return m;
}

torch::jit::Module linear_module(const torch::nn::LinearImpl& l, const ScriptAttrs& attrs) {
  torch::jit::Module m = eval_module(attrs, "torch.nn.modules.linear.Linear");
  add_tensor(m, "weight", l.weight);
  add_tensor(m, "bias", l.bias);
  define_forward(m,
                 "def forward(self, input: Tensor) -> Tensor:\n"
                 "    return torch.linear(input, self.weight, self.bias)\n");
  return m;
}

/// `torch.layer_norm(x, ...)` of a LayerNorm module whose tensors are `owner.weight` and `owner.bias`.
std::string layer_norm(const torch::nn::LayerNormImpl& n, const std::string& owner, const std::string& x) {
  std::string shape;
  for (int64_t d : n.options.normalized_shape()) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
  return "torch.layer_norm(" + x + ", [" + shape + "], " + owner + ".weight, " + owner + ".bias, " +
         ir::python_float_repr(n.options.eps()) + ")";
}

torch::jit::Module norm_module(const torch::nn::LayerNormImpl& n, const ScriptAttrs& attrs) {
  torch::jit::Module m = eval_module(attrs, "torch.nn.modules.normalization.LayerNorm");
  add_tensor(m, "weight", n.weight);
  add_tensor(m, "bias", n.bias);
  m.register_attribute("eps", c10::FloatType::get(), n.options.eps());
  define_forward(m, "def forward(self, input: Tensor) -> Tensor:\n    return " + layer_norm(n, "self", "input") + "\n");
  return m;
}

torch::jit::Module dropout_module(double p, const ScriptAttrs& attrs) {
  torch::jit::Module m = eval_module(attrs, "torch.nn.modules.dropout.Dropout");
  m.register_attribute("p", c10::FloatType::get(), p);
  define_forward(m, "def forward(self, input: Tensor) -> Tensor:\n    return input\n");
  return m;
}

/// What the fast paths check of a layer `L` (1.13's first elif chain).
constexpr const char* kLayerChecks =
    "not L.training and L.self_attn.batch_first and L.self_attn._qkv_same_embed_dim and L.norm1.eps == L.norm2.eps "
    "and L.self_attn.num_heads % 2 == 0 and not torch.is_autocast_enabled()";

/// torch._transformer_encoder_layer_fwd when 1.13's checks pass.
constexpr const char* kLayerFastPath = R"(
    if src.dim() == 3 and LAYER_CHECKS and src_mask is None and not (src.is_nested and src_key_padding_mask is not None):
        if not (torch.is_grad_enabled() and (src.requires_grad or GRAD_PARAMS)):
            mask_type: Optional[int] = None
            if src_key_padding_mask is not None:
                mask_type = 1
            return torch._transformer_encoder_layer_fwd(src, EMBED, HEADS, self.self_attn.in_proj_weight, self.self_attn.in_proj_bias, self.self_attn.out_proj.weight, self.self_attn.out_proj.bias, USE_GELU, NORM_FIRST, EPS, self.norm1.weight, self.norm1.bias, self.norm2.weight, self.norm2.bias, self.linear1.weight, self.linear1.bias, self.linear2.weight, self.linear2.bias, src_key_padding_mask, mask_type)
)";

const char* const kFastPathParams[] = {"self.self_attn.in_proj_weight",
                                       "self.self_attn.in_proj_bias",
                                       "self.self_attn.out_proj.weight",
                                       "self.self_attn.out_proj.bias",
                                       "self.norm1.weight",
                                       "self.norm1.bias",
                                       "self.norm2.weight",
                                       "self.norm2.bias",
                                       "self.linear1.weight",
                                       "self.linear1.bias",
                                       "self.linear2.weight",
                                       "self.linear2.bias"};

std::string layer_checks(const std::string& layer) {
  std::string checks = kLayerChecks;
  replace_all(checks, "L.", layer + ".");
  return checks;
}

std::string grad_params() {
  std::string out;
  for (const char* p : kFastPathParams) out += (out.empty() ? "" : " or ") + std::string(p) + ".requires_grad";
  return out;
}

std::string layer_forward(const nn::TransformerEncoderLayerImpl& l) {
  std::string out =
      "def forward(self, src: Tensor, src_mask: Optional[Tensor] = None, src_key_padding_mask: Optional[Tensor] = "
      "None) -> Tensor:\n";
  out += kLayerFastPath;
  std::string attention =
      "self.self_attn.forward(X, X, X, key_padding_mask=src_key_padding_mask, "
      "need_weights=False, attn_mask=src_mask)" +
      std::string(l.self_attn->options.output_alone() ? "" : "[0]");
  std::string activation = l.options.activation() == "gelu" ? "torch.gelu" : "torch.relu";
  std::string feed_forward = "torch.linear(" + activation +
                             "(torch.linear(X, self.linear1.weight, self.linear1.bias)), "
                             "self.linear2.weight, self.linear2.bias)";
  auto of = [](std::string block, const std::string& x) {
    replace_all(block, "X", x);
    return block;
  };
  if (l.options.norm_first()) {  // one normalized tensor as query, key and value (the identity test)
    out += "    h = " + layer_norm(*l.norm1, "self.norm1", "src") + "\n";
    out += "    x = src + " + of(attention, "h") + "\n";
    out += "    return x + " + of(feed_forward, layer_norm(*l.norm2, "self.norm2", "x")) + "\n";
  } else {
    out += "    x = " + layer_norm(*l.norm1, "self.norm1", "src + " + of(attention, "src")) + "\n";
    out += "    return " + layer_norm(*l.norm2, "self.norm2", "x + " + of(feed_forward, "x")) + "\n";
  }
  const nn::MultiheadAttentionOptions& a = l.self_attn->options;
  replace_all(out, "LAYER_CHECKS", layer_checks("self"));
  replace_all(out, "GRAD_PARAMS", grad_params());
  replace_all(out, "EMBED", std::to_string(a.embed_dim()));
  replace_all(out, "HEADS", std::to_string(a.num_heads()));
  replace_all(out, "USE_GELU", python_bool(l.options.activation() == "gelu"));
  replace_all(out, "NORM_FIRST", python_bool(l.options.norm_first()));
  replace_all(out, "EPS", ir::python_float_repr(l.norm1->options.eps()));
  return out;
}

torch::jit::Module layer_module(const nn::TransformerEncoderLayerImpl& l, const ScriptAttrs& attrs) {
  torch::jit::Module m = eval_module(attrs, "torch.nn.modules.transformer.TransformerEncoderLayer");
  m.register_module("self_attn", attention_script_module(*l.self_attn, attrs));
  m.register_module("linear1", linear_module(*l.linear1, attrs));
  m.register_module("dropout", dropout_module(l.dropout->options.p(), attrs));
  m.register_module("linear2", linear_module(*l.linear2, attrs));
  m.register_module("norm1", norm_module(*l.norm1, attrs));
  m.register_module("norm2", norm_module(*l.norm2, attrs));
  m.register_module("dropout1", dropout_module(l.dropout1->options.p(), attrs));
  m.register_module("dropout2", dropout_module(l.dropout2->options.p(), attrs));
  m.register_attribute("norm_first", c10::BoolType::get(), l.options.norm_first());
  m.register_attribute("activation_relu_or_gelu", c10::IntType::get(),
                       int64_t{l.options.activation() == "gelu" ? 2 : 1});
  define_forward(m, layer_forward(l));
  return m;
}

/// TransformerEncoder's nested-tensor path when 1.13's checks pass.
constexpr const char* kNestedPath = R"(
    first = getattr(self.layers, "0")
    if not first.norm_first and LAYER_CHECKS and src.dim() == 3 and self.enable_nested_tensor and src_key_padding_mask is not None and mask is None and not src.is_nested:
        if not self.mask_check or torch._nested_tensor_from_mask_left_aligned(src, src_key_padding_mask.logical_not()):
            if not (torch.is_grad_enabled() and (src.requires_grad or GRAD_PARAMS)):
                convert_to_nested = True
                output = torch._nested_tensor_from_mask(output, src_key_padding_mask.logical_not(), False)
                key_padding_mask = None
)";

std::string encoder_forward(const nn::TransformerEncoderImpl& e) {
  std::string out =
      "def forward(self, src: Tensor, mask: Optional[Tensor] = None, src_key_padding_mask: Optional[Tensor] = None) "
      "-> Tensor:\n"
      "    output = src\n"
      "    key_padding_mask = src_key_padding_mask\n"
      "    convert_to_nested = False\n";
  std::string nested = kNestedPath + 1;
  std::string params = grad_params();
  replace_all(params, "self.", "first.");
  replace_all(nested, "LAYER_CHECKS", layer_checks("first"));
  replace_all(nested, "GRAD_PARAMS", params);
  out += nested;
  for (size_t i = 0; i < e.layers->size(); ++i) {
    out += "    output = getattr(self.layers, \"" + std::to_string(i) + "\").forward(output, mask, key_padding_mask)\n";
  }
  out += "    if convert_to_nested:\n        output = output.to_padded_tensor(0.)\n";
  if (e.norm) out += "    output = " + layer_norm(*e.norm, "self.norm", "output") + "\n";
  return out + "    return output\n";
}

torch::jit::Module encoder_module(const nn::TransformerEncoderImpl& e, const ScriptAttrs& attrs) {
  torch::jit::Module layers = eval_module(attrs, "torch.nn.modules.container.ModuleList");
  for (size_t i = 0; i < e.layers->size(); ++i)
    layers.register_module(std::to_string(i), layer_module(e.layer(i), attrs));
  torch::jit::Module m = eval_module(attrs, "torch.nn.modules.transformer.TransformerEncoder");
  m.register_module("layers", layers);
  if (e.norm) {
    m.register_module("norm", norm_module(*e.norm, attrs));
  } else {
    m.register_attribute("norm", c10::NoneType::get(), c10::IValue());
  }
  m.register_attribute("num_layers", c10::IntType::get(), static_cast<int64_t>(e.layers->size()));
  m.register_attribute("enable_nested_tensor", c10::BoolType::get(), e.options.enable_nested_tensor());
  m.register_attribute("mask_check", c10::BoolType::get(), e.options.mask_check());
  define_forward(m, encoder_forward(e));
  return m;
}

}  // namespace

std::string encoder_submodule(const torch::nn::Module& m, const std::string& path, ScriptAttrs& attrs) {
  if (auto* layer = dynamic_cast<const nn::TransformerEncoderLayerImpl*>(&m)) {
    return attrs.add(path, layer_module(*layer, attrs)._ivalue());
  }
  return attrs.add(path, encoder_module(dynamic_cast<const nn::TransformerEncoderImpl&>(m), attrs)._ivalue());
}

}  // namespace qfx::io::detail
