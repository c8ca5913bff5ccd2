// correct-bias: empirical bias correction (Nagel et al. 2019, section 4.2).
// Quantizing a layer's weights W to W~ shifts its output's mean by
// (W~ - W) E[x]; the bias absorbs it: b -= (W~ - W) E[x]. E[x] is each input
// channel's mean over the calibration data (for convs over batch and space,
// as if padding saw the mean too), measured on the float model; W~ is what
// the weight observer of the node's qconfig makes of W.

#include "weighted_layers.h"

#include "qfx/ir/interpreter.h"
#include "qfx/passes/pass.h"
#include "qfx/quant/fake_quantize.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <map>
#include <ostream>

namespace qfx::passes {
namespace {

/// The running per-channel mean of the tensors a layer takes (channel dim 1
/// for convs, the last dim for linears).
struct InputMean {
  bool conv = false;
  at::Tensor sum;
  int64_t count = 0;

  void add(const at::Tensor& x) {
    at::Tensor rows = conv ? x.transpose(0, 1).reshape({x.size(1), -1}) : x.reshape({-1, x.size(-1)}).t();
    at::Tensor s = rows.to(at::kDouble).sum(1);
    sum = sum.defined() ? sum + s : s;
    count += rows.size(1);
  }
  at::Tensor mean() const { return (sum / static_cast<double>(count)).to(at::kFloat); }
};

/// The mean input of each node in `layers`, from running the model on `inputs`.
std::map<const ir::Node*, InputMean> input_means(ir::GraphModule& gm, const std::vector<const ir::Node*>& layers,
                                                 const std::vector<std::vector<c10::IValue>>& inputs) {
  std::map<const ir::Node*, InputMean> means;
  std::multimap<const ir::Node*, const ir::Node*> consumers;  // input node -> layer
  for (const ir::Node* layer : layers) {
    means[layer].conv = detail::weighted_layer(gm, *layer)->weight.dim() > 2;
    consumers.emplace(layer->args()[0].to_node(), layer);
  }
  ir::Interpreter interpreter(gm);
  interpreter.set_node_hook([&](const ir::Node& node, const c10::IValue& value) {
    auto [begin, end] = consumers.equal_range(&node);
    for (auto it = begin; it != end; ++it) {
      TORCH_CHECK(value.isTensor(), "correct-bias: the input of ", it->second->name(), " is not a tensor");
      means[it->second].add(value.toTensor());
    }
  });
  for (const auto& batch : inputs) interpreter.run(batch);
  return means;
}

/// W~ - W for the weight observer of `qconfig`.
at::Tensor weight_error(const at::Tensor& weight, const quant::QConfig& qconfig) {
  detail::ObservedWeight observed = detail::observe_weight(weight, qconfig);
  const quant::QParams& q = observed.qparams;
  return quant::fake_quantize(weight, *observed.observer, q.scale, q.zero_point.to(at::kInt)) - weight;
}

/// (W~ - W) E[x] per output channel.
at::Tensor output_shift(const at::Tensor& error, int64_t groups, const at::Tensor& mean) {
  const int64_t out = error.size(0);
  at::Tensor per_input = error.reshape({groups, out / groups, error.size(1), -1}).sum(3);  // [G, O/G, I/G]
  return at::matmul(per_input, mean.view({groups, -1, 1})).reshape({out});
}

}  // namespace

bool correct_bias(ir::GraphModule& gm, const CorrectBiasOptions& options) {
  options.check("correct-bias");
  torch::NoGradGuard no_grad;
  auto quantized = detail::weight_quantized_layers(gm, *options.qconfig_mapping);
  std::vector<const ir::Node*> layers;
  for (const auto& entry : quantized) layers.push_back(entry.first);
  std::map<const ir::Node*, InputMean> means = input_means(gm, layers, *options.calibration_inputs);
  for (const auto& [node, qconfig] : quantized) {
    detail::WeightedLayer layer = *detail::weighted_layer(gm, *node);
    at::Tensor shift = output_shift(weight_error(layer.weight, qconfig), layer.groups, means[node].mean());
    layer.ensure_bias().sub_(shift);
    if (options.explain != nullptr) {
      *options.explain << "correct-bias: " << node->name() << " mean shift " << shift.abs().max().item<double>()
                       << "\n";
    }
  }
  return !layers.empty();
}

}  // namespace qfx::passes
