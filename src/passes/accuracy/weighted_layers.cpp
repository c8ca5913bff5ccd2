// Finding the conv and linear layers behind call_module nodes.

#include "weighted_layers.h"

#include "qfx/ir/module_registry.h"
#include "qfx/nn/intrinsic.h"
#include "passes/prepare/qconfig_resolution.h"

#include <ATen/ATen.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

namespace qfx::passes::detail {
namespace {

/// `module`'s forward with `weight` and `bias` in its members for the call.
template <typename Module>
at::Tensor forward_swapping(Module* module, const at::Tensor& x, at::Tensor weight, at::Tensor bias) {
  struct Swap {
    Module* module;
    at::Tensor& weight;
    at::Tensor& bias;
    void swap() {
      std::swap(module->weight, weight);
      std::swap(module->bias, bias);
    }
    ~Swap() { swap(); }
  } swapped{module, weight, bias};
  swapped.swap();
  return module->forward(x);
}

template <typename Conv>
bool as_conv(torch::nn::Module* module, WeightedLayer& layer) {
  auto* conv = dynamic_cast<Conv*>(module);
  if (conv == nullptr) return false;
  layer = {conv,
           conv->weight,
           &conv->bias,
           conv->options.groups(),
           false,
           [conv](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
             return forward_swapping(conv, x, w, b);
           }};
  return true;
}

/// The conv or linear `module` is, if it is one.
std::optional<WeightedLayer> plain_layer(torch::nn::Module* module) {
  WeightedLayer layer;
  if (as_conv<torch::nn::Conv1dImpl>(module, layer) || as_conv<torch::nn::Conv2dImpl>(module, layer) ||
      as_conv<torch::nn::Conv3dImpl>(module, layer)) {
    return layer;
  }
  if (auto* linear = dynamic_cast<torch::nn::LinearImpl*>(module)) {
    return WeightedLayer{linear,
                         linear->weight,
                         &linear->bias,
                         1,
                         false,
                         [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
                           return at::linear(x, w, b); }};
  }
  return std::nullopt;
}

bool is_fused_relu(nn::FusedKind kind) {
  return kind == nn::FusedKind::kConvReLU1d || kind == nn::FusedKind::kConvReLU2d ||
         kind == nn::FusedKind::kConvReLU3d || kind == nn::FusedKind::kLinearReLU;
}

}  // namespace

at::Tensor& WeightedLayer::ensure_bias() {
  if (!bias->defined()) *bias = module->register_parameter("bias", at::zeros({weight.size(0)}, weight.options()));
  return *bias;
}

std::optional<WeightedLayer> weighted_layer(const ir::GraphModule& gm, const ir::Node& node) {
  if (node.op() != ir::Opcode::kCallModule) return std::nullopt;
  std::shared_ptr<torch::nn::Module> module = gm.find_submodule(node.target());
  if (auto* fused = dynamic_cast<nn::FusedModuleImpl*>(module.get())) {
    if (!is_fused_relu(fused->kind())) return std::nullopt;
    std::optional<WeightedLayer> layer = plain_layer(fused->module(0).get());
    if (layer) layer->relu = true;
    return layer;
  }
  return plain_layer(module.get());
}

std::vector<std::pair<const ir::Node*, quant::QConfig>> weight_quantized_layers(const ir::GraphModule& gm,
                                                                                const quant::QConfigMapping& mapping) {
  auto qconfigs = node_qconfigs(gm, mapping);
  std::vector<std::pair<const ir::Node*, quant::QConfig>> layers;
  for (const ir::Node* node : gm.graph().nodes()) {
    auto found = qconfigs.find(node);
    if (found == qconfigs.end() || !found->second || !weighted_layer(gm, *node)) continue;
    if (!quant::is_quantized_dtype(found->second->weight.prototype()->dtype())) continue;
    if (!node->args().empty() && node->args()[0].is_node()) layers.emplace_back(node, *found->second);
  }
  return layers;
}

ObservedWeight observe_weight(const at::Tensor& weight, const quant::QConfig& qconfig) {
  std::shared_ptr<quant::ActivationPostProcess> observer = qconfig.weight.make();
  observer->forward(weight);
  return {observer, observer->calculate_qparams()};
}

bool is_relu(const ir::GraphModule& gm, const ir::Node& node) {
  if (node.args().empty() || !node.args()[0].is_node()) return false;
  switch (node.op()) {
    case ir::Opcode::kCallModule: return ir::module_type_name(*gm.find_submodule(node.target())) == "torch.nn.ReLU";
    case ir::Opcode::kCallFunction: return node.target() == "torch.relu" || node.target() == "torch.nn.functional.relu";
    case ir::Opcode::kCallMethod: return node.target() == "relu";
    default: return false;
  }
}

}  // namespace qfx::passes::detail
