// adaround: learned rounding of weights (Nagel et al. 2020, "Up or Down?
// Adaptive Rounding for Post-Training Quantization"). For each conv or linear
// whose qconfig quantizes its weight, layer by layer: the qparams are those
// the qconfig's weight observer gives; each weight is floor(W/s) plus a
// learned h(V) in [0, 1] (a rectified sigmoid), V trained with Adam to
// minimize ||layer(x; W~) - layer(x; W)||^2 over the layer's float inputs on
// the calibration data plus lambda * sum(1 - |2h - 1|^beta), beta annealed
// from 20 to 2 after a warm-up, which drives h to 0 or 1. The weights are then
// set to the chosen grid points, so convert quantizes them exactly; each
// channel's (or the tensor's) smallest and largest weight keep their value so
// that a min/max weight observer gives the same qparams again.

#include "weighted_layers.h"

#include "qfx/ir/interpreter.h"
#include "qfx/passes/pass.h"
#include "qfx/quant/fake_quantize.h"
#include "qfx/quant/qtypes.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/optim/adam.h>

#include <cmath>
#include <ostream>

namespace qfx::passes {
namespace {

constexpr double kZeta = 1.1;  // the rectified sigmoid's stretch (the paper's zeta and gamma)
constexpr double kGamma = -0.1;
constexpr double kLambda = 0.01;  // weight of the rounding regularizer
constexpr double kWarmUp = 0.2;   // share of the iterations without it

/// The quantization grid of a layer's weight: scale and zero point
/// broadcastable to it, and the integer range.
struct Grid {
  at::Tensor scale;
  at::Tensor zero_point;
  double quant_min;
  double quant_max;
};

Grid grid_of(const at::Tensor& weight, const quant::QConfig& qconfig) {
  detail::ObservedWeight observed = detail::observe_weight(weight, qconfig);
  const quant::ActivationPostProcess& observer = *observed.observer;
  const quant::QParams& q = observed.qparams;
  auto [quant_min, quant_max] = observer.quant_range();
  std::vector<int64_t> shape(weight.dim(), 1);
  if (quant::is_per_channel(observer.qscheme())) shape[observer.ch_axis()] = -1;
  return {q.scale.to(at::kFloat).reshape(shape), q.zero_point.to(at::kFloat).reshape(shape),
          static_cast<double>(quant_min), static_cast<double>(quant_max)};
}

/// h(V): the rectified sigmoid.
at::Tensor rectified_sigmoid(const at::Tensor& v) {
  return at::clamp(at::sigmoid(v) * (kZeta - kGamma) + kGamma, 0, 1);
}

/// The weight on the grid for the rounding h (soft or 0/1).
at::Tensor on_grid(const at::Tensor& floor, const at::Tensor& h, const Grid& grid) {
  return (at::clamp(floor + h + grid.zero_point, grid.quant_min, grid.quant_max) - grid.zero_point) * grid.scale;
}

/// Each channel's (dim 0) smallest and largest weight, or the tensor's.
at::Tensor extremes(const at::Tensor& weight, bool per_channel) {
  at::Tensor rows = per_channel ? weight.reshape({weight.size(0), -1}) : weight.reshape({1, -1});
  auto [lo, hi] = rows.aminmax(1, true);
  return ((rows == lo) | (rows == hi)).reshape(weight.sizes());
}

/// The layer's inputs on the calibration data (float model).
std::vector<at::Tensor> layer_inputs(ir::GraphModule& gm, const ir::Node& node,
                                     const std::vector<std::vector<c10::IValue>>& batches) {
  const ir::Node* input = node.args()[0].to_node();
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> inputs;
  ir::Interpreter interpreter(gm);
  interpreter.set_node_hook([&](const ir::Node& n, const c10::IValue& value) {
    if (&n == input) inputs.push_back(value.toTensor().detach().clone());
  });
  for (const auto& batch : batches) interpreter.run(batch);
  return inputs;
}

/// Learns the rounding of one layer; returns the weight on the grid.
at::Tensor learn_rounding(const detail::WeightedLayer& layer, const Grid& grid, const std::vector<at::Tensor>& inputs,
                          int64_t iterations) {
  at::Tensor weight = layer.weight.detach().clone();
  at::Tensor bias = layer.bias->defined() ? layer.bias->detach().clone() : at::Tensor();
  at::Tensor floor = at::floor(weight / grid.scale);
  at::Tensor rest = weight / grid.scale - floor;
  at::Tensor v = (-at::log((kZeta - kGamma) / (rest - kGamma) - 1)).detach().requires_grad_(true);
  torch::optim::Adam adam({v}, torch::optim::AdamOptions(1e-2));
  const auto warm_up = static_cast<int64_t>(kWarmUp * static_cast<double>(iterations));
  for (int64_t it = 0; it < iterations; ++it) {
    const at::Tensor& x = inputs[static_cast<size_t>(it) % inputs.size()];
    at::Tensor target;
    {
      torch::NoGradGuard no_grad;
      target = layer.forward_with(x, weight, bias);
    }
    at::Tensor h = rectified_sigmoid(v);
    at::Tensor loss = (layer.forward_with(x, on_grid(floor, h, grid), bias) - target).pow(2).mean();
    if (it >= warm_up) {
      double progress =
          static_cast<double>(it - warm_up) / static_cast<double>(std::max<int64_t>(1, iterations - warm_up));
      double beta = 20.0 + (2.0 - 20.0) * progress;
      loss = loss + kLambda * (1 - (2 * h - 1).abs().pow(beta)).sum();
    }
    adam.zero_grad();
    loss.backward();
    adam.step();
  }
  torch::NoGradGuard no_grad;
  at::Tensor hard = (rectified_sigmoid(v) >= 0.5).to(at::kFloat);
  bool per_channel = grid.scale.numel() > 1;
  return at::where(extremes(weight, per_channel), weight, on_grid(floor, hard, grid));
}

}  // namespace

bool adaround(ir::GraphModule& gm, const AdaroundOptions& options) {
  options.check("adaround");
  TORCH_CHECK(options.iterations > 0, "adaround: iterations must be positive, not ", options.iterations);
  auto layers = detail::weight_quantized_layers(gm, *options.qconfig_mapping);
  for (const auto& [node, qconfig] : layers) {
    detail::WeightedLayer layer = *detail::weighted_layer(gm, *node);
    std::vector<at::Tensor> inputs = layer_inputs(gm, *node, *options.calibration_inputs);
    at::Tensor rounded;
    {
      // autograd on copies: a model loaded under c10::InferenceMode holds inference tensors
      c10::InferenceMode no_inference_mode(false);
      torch::AutoGradMode autograd(true);
      for (at::Tensor& x : inputs) x = x.clone();
      Grid grid = grid_of(layer.weight.detach().clone(), qconfig);
      rounded = learn_rounding(layer, grid, inputs, options.iterations);
      if (options.explain != nullptr) {
        at::Tensor nearest = on_grid(at::round(layer.weight.detach() / grid.scale), at::zeros({}), grid);
        *options.explain << "adaround: " << node->name() << " rounds " << (rounded != nearest).sum().item<int64_t>()
                         << " of " << rounded.numel() << " weights away from nearest\n";
      }
    }
    c10::InferenceMode in_place(layer.weight.is_inference());
    torch::NoGradGuard no_grad;
    layer.weight.copy_(rounded);
  }
  return !layers.empty();
}

}  // namespace qfx::passes
