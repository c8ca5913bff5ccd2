#pragma once
// The float conv and linear layers of a (fused) graph, as the accuracy passes
// (equalize, correct-bias) rewrite their parameters: the layer's weight and
// bias, its groups, and whether a ReLU follows inside a fused module.

#include "qfx/ir/graph_module.h"
#include "qfx/quant/observer_base.h"
#include "qfx/quant/qconfig_mapping.h"

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace qfx::passes::detail {

/// A Conv1d/2d/3d or Linear, alone or as the first module of ConvReLU* /
/// LinearReLU.
struct WeightedLayer {
  torch::nn::Module* module = nullptr;  ///< the conv or linear itself
  at::Tensor weight;                    ///< [out, in / groups, ...]
  at::Tensor* bias = nullptr;           ///< the module's bias member (may be undefined)
  int64_t groups = 1;
  bool relu = false;  ///< a fused ReLU follows
  /// The layer's output for `x` with `weight` and `bias` (may be undefined)
  /// in place of its own (no fused ReLU); differentiable in `weight`.
  std::function<at::Tensor(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias)> forward_with;
  /// The layer's bias, made (zeros, registered) when it has none.
  at::Tensor& ensure_bias();
};

/// The layer `node` calls, or nullopt when it calls none.
std::optional<WeightedLayer> weighted_layer(const ir::GraphModule& gm, const ir::Node& node);

/// The weighted layers of `gm` whose qconfig in `mapping` quantizes their
/// weight (to qint8, quint8, ...), with that qconfig, in graph order.
std::vector<std::pair<const ir::Node*, quant::QConfig>> weight_quantized_layers(const ir::GraphModule& gm,
                                                                                const quant::QConfigMapping& mapping);

/// A weight as its qconfig's weight observer sees it: the observer after
/// observing the weight, and the qparams it gives.
struct ObservedWeight {
  std::shared_ptr<quant::ActivationPostProcess> observer;
  quant::QParams qparams;
};
ObservedWeight observe_weight(const at::Tensor& weight, const quant::QConfig& qconfig);

/// True for a ReLU node (module, function or method) with one input.
bool is_relu(const ir::GraphModule& gm, const ir::Node& node);

}  // namespace qfx::passes::detail
