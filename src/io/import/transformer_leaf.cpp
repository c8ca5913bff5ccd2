// A scripted nn.TransformerEncoder(Layer) as the leaf it is: its forward
// branches on its input (the fast-path checks), so FX and qfx keep it whole
// and float; qfx builds nn::TransformerEncoder(Layer), which computes 1.13's
// forward, from the scripted module's attributes (activation_relu_or_gelu,
// norm_first, batch_first, eps, dropout p, enable_nested_tensor, mask_check)
// and tensors.

#include "leaf_modules.h"

#include "qfx/nn/transformer.h"

namespace qfx::io::detail {
namespace {

torch::jit::Module child(const torch::jit::Module& m, const char* name) { return m.attr(name).toModule(); }

double eps_of(const torch::jit::Module& norm) { return norm.attr("eps").toDouble(); }

void copy_linear(torch::nn::LinearImpl& to, const torch::jit::Module& from) {
  assign(to.weight, from.attr("weight").toTensor());
  assign(to.bias, from.attr("bias").toTensor());
}

void copy_norm(torch::nn::LayerNormImpl& to, const torch::jit::Module& from) {
  assign(to.weight, from.attr("weight").toTensor());
  assign(to.bias, from.attr("bias").toTensor());
  to.options.eps(eps_of(from));
}

/// The options a scripted layer's attributes give; nullopt for an
/// activation other than relu and gelu (activation_relu_or_gelu 0).
c10::optional<nn::TransformerEncoderLayerOptions> layer_options(const torch::jit::Module& layer) {
  int64_t activation = layer.hasattr("activation_relu_or_gelu") ? layer.attr("activation_relu_or_gelu").toInt() : 0;
  if (activation != 1 && activation != 2) return c10::nullopt;
  const torch::jit::Module attention = child(layer, "self_attn");
  at::Tensor linear1 = child(layer, "linear1").attr("weight").toTensor();
  return nn::TransformerEncoderLayerOptions(linear1.size(1), attention.attr("num_heads").toInt())
      .dim_feedforward(linear1.size(0))
      .dropout(child(layer, "dropout").attr("p").toDouble())
      .activation(activation == 2 ? "gelu" : "relu")
      .layer_norm_eps(eps_of(child(layer, "norm1")))
      .batch_first(attention.attr("batch_first").toBool())
      .norm_first(layer.attr("norm_first").toBool());
}

/// `to` with the scripted layer's tensors, its self-attention read as a
/// scripted MultiheadAttention.
void copy_layer(nn::TransformerEncoderLayerImpl& to, const torch::jit::Module& from) {
  auto attention =
      std::dynamic_pointer_cast<nn::MultiheadAttentionImpl>(scripted_attention_leaf(child(from, "self_attn")));
  to.self_attn = to.replace_module("self_attn", nn::MultiheadAttention(attention));
  copy_linear(*to.linear1, child(from, "linear1"));
  copy_linear(*to.linear2, child(from, "linear2"));
  copy_norm(*to.norm1, child(from, "norm1"));
  copy_norm(*to.norm2, child(from, "norm2"));
  to.train(from.is_training());
}

std::shared_ptr<torch::nn::Module> encoder_layer(const torch::jit::Module& layer) {
  c10::optional<nn::TransformerEncoderLayerOptions> options = layer_options(layer);
  if (!options) return nullptr;
  nn::TransformerEncoderLayer built(*options);
  copy_layer(*built, layer);
  return built.ptr();
}

std::shared_ptr<torch::nn::Module> encoder(const torch::jit::Module& encoder) {
  std::vector<torch::jit::Module> layers;
  for (const torch::jit::Module& layer : child(encoder, "layers").children()) layers.push_back(layer);
  if (layers.empty()) return nullptr;
  c10::optional<nn::TransformerEncoderLayerOptions> options = layer_options(layers[0]);
  for (const torch::jit::Module& layer : layers) {
    if (!options || !layer_options(layer)) return nullptr;
  }
  nn::TransformerEncoderOptions encoder_options(*options, static_cast<int64_t>(layers.size()));
  c10::IValue norm = encoder.hasattr("norm") ? encoder.attr("norm") : c10::IValue();
  if (norm.isModule()) encoder_options.norm_eps(eps_of(norm.toModule()));
  encoder_options.enable_nested_tensor(!encoder.hasattr("enable_nested_tensor") ||
                                       encoder.attr("enable_nested_tensor").toBool());
  encoder_options.mask_check(!encoder.hasattr("mask_check") || encoder.attr("mask_check").toBool());
  nn::TransformerEncoder built(encoder_options);
  for (size_t i = 0; i < layers.size(); ++i) {
    nn::TransformerEncoderLayerImpl& layer = built->layer(i);
    layer.options = *layer_options(layers[i]);
    copy_layer(layer, layers[i]);
  }
  if (norm.isModule()) copy_norm(*built->norm, norm.toModule());
  built->train(encoder.is_training());
  return built.ptr();
}

}  // namespace

std::shared_ptr<torch::nn::Module> scripted_encoder_leaf(const torch::jit::Module& module,
                                                         const std::string& python_class) {
  if (python_class == "torch.nn.modules.transformer.TransformerEncoderLayer") return encoder_layer(module);
  if (python_class == "torch.nn.modules.transformer.TransformerEncoder") return encoder(module);
  return nullptr;
}

}  // namespace qfx::io::detail
