// equalize: cross-layer equalization (Nagel et al. 2019, "Data-Free
// Quantization Through Weight Equalization and Bias Correction", section 4.1).
// For consecutive layers y = W2 relu(W1 x + b1), channel i of W1's output is
// divided by s_i and W2's input channel i multiplied by it (ReLU commutes with
// positive scales), with s_i = sqrt(r1_i r2_i) / r2_i: both then have the
// per-channel range sqrt(r1_i r2_i). Repeated over all pairs until the
// scales settle, so chains of three or more layers equalize too.

#include "weighted_layers.h"

#include "qfx/passes/pass.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <cmath>
#include <ostream>
#include <vector>

namespace qfx::passes {
namespace {

struct LayerPair {
  detail::WeightedLayer first;
  detail::WeightedLayer second;
  std::string names;  // "conv1 -> conv2", for --explain
};

/// The layer `node`'s value feeds alone (directly or through one ReLU), when
/// its input channels are `node`'s output channels.
const ir::Node* next_layer(const ir::GraphModule& gm, const ir::Node& node, bool relu_between) {
  if (node.users().size() != 1) return nullptr;
  const ir::Node* user = node.users()[0];
  if (!relu_between && detail::is_relu(gm, *user)) return next_layer(gm, *user, true);
  if (!detail::weighted_layer(gm, *user) || user->args().empty() || !user->args()[0].is_node()) return nullptr;
  return user->args()[0].to_node() == &node ? user : nullptr;
}

/// W2's input channels as rows [groups, out per group, in per group, rest].
at::Tensor input_channel_view(const detail::WeightedLayer& layer) {
  const int64_t groups = layer.groups;
  return layer.weight.view({groups, layer.weight.size(0) / groups, layer.weight.size(1), -1});
}

std::vector<LayerPair> layer_pairs(const ir::GraphModule& gm) {
  std::vector<LayerPair> pairs;
  for (const ir::Node* node : gm.graph().nodes()) {
    std::optional<detail::WeightedLayer> first = detail::weighted_layer(gm, *node);
    if (!first) continue;
    const ir::Node* next = next_layer(gm, *node, first->relu);
    if (next == nullptr) continue;
    detail::WeightedLayer second = *detail::weighted_layer(gm, *next);
    if (second.weight.size(1) * second.groups != first->weight.size(0)) continue;
    pairs.push_back({*first, second, node->name() + " -> " + next->name()});
  }
  return pairs;
}

/// Equalizes one pair; returns the largest |log s_i|.
double equalize_pair(LayerPair& pair) {
  at::Tensor w1 = pair.first.weight;
  at::Tensor r1 = w1.abs().reshape({w1.size(0), -1}).amax(1);
  at::Tensor w2 = input_channel_view(pair.second);  // [G, O/G, I/G, rest]
  at::Tensor r2 = w2.abs().amax({1, 3}).reshape({-1});
  at::Tensor scale = at::where((r1 > 0) & (r2 > 0), at::sqrt(r1 * r2) / r2, at::ones_like(r1));
  std::vector<int64_t> per_row(w1.dim(), 1);
  per_row[0] = -1;
  w1.div_(scale.reshape(per_row));
  if (pair.first.bias->defined()) pair.first.bias->div_(scale);
  w2.mul_(scale.reshape({pair.second.groups, 1, -1, 1}));
  return scale.log().abs().max().item<double>();
}

}  // namespace

EqualizeOptions EqualizeOptions::of(const PassOptions& p) { return {p.explain}; }

bool equalize(ir::GraphModule& gm, const EqualizeOptions& options) {
  torch::NoGradGuard no_grad;
  std::vector<LayerPair> pairs = layer_pairs(gm);
  constexpr int kMaxRounds = 100;
  constexpr double kSettled = 1e-6;
  for (int round = 0; round < kMaxRounds; ++round) {
    double change = 0;
    for (LayerPair& pair : pairs) change = std::max(change, equalize_pair(pair));
    if (change < kSettled) break;
  }
  if (options.explain != nullptr) {
    for (const LayerPair& pair : pairs) *options.explain << "equalize: " << pair.names << "\n";
  }
  return !pairs.empty();
}

}  // namespace qfx::passes
