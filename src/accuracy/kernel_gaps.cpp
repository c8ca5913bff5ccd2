// Kernel gaps: the reference model run teacher-forced on the lowered
// model's values, each quantize node compared with its lowered counterpart.

#include "qfx/accuracy/kernel_gaps.h"

#include "qfx/ir/interpreter.h"

#include <ATen/ATen.h>

#include <cmath>
#include <map>
#include <unordered_map>

namespace qfx {
namespace {

bool is_quantize(const ir::Node& node) {
  return node.op() == ir::Opcode::kCallFunction && node.target() == "torch.quantize_per_tensor" &&
         !node.args().empty() && node.args()[0].is_node();
}

bool per_tensor(const c10::IValue& value) {
  return value.isTensor() && value.toTensor().is_quantized() && value.toTensor().qscheme() == at::kPerTensorAffine;
}

/// The lowered model's quantized per-tensor values of one batch, by node name
/// (copies: a later in-place op, as ReLU6(inplace=True), changes the value).
std::unordered_map<std::string, at::Tensor> lowered_values(ir::Interpreter& lowered,
                                                           const std::vector<c10::IValue>& inputs) {
  std::unordered_map<std::string, at::Tensor> values;
  lowered.set_node_hook([&](const ir::Node& node, const c10::IValue& value) {
    if (per_tensor(value)) values[node.name()] = value.toTensor().clone();
  });
  lowered.run(inputs);
  lowered.set_node_hook(nullptr);
  return values;
}

/// Per op node of the reference model: the worst gap so far, and element counts.
struct GapTally {
  KernelGap gap;
  int64_t off = 0;
  int64_t elements = 0;
};

/// A step below this (2^-20) quantizes a range the observer saw as float
/// rounding noise (a normalization of constant channels: ~1e-5 wide), where
/// two correct float computations differ by many steps: not measured.
constexpr double kNoiseStep = 1.0 / (1 << 20);

/// Compares the reference's quantized value `ours` with the lowered model's
/// `theirs` in the reference's steps (qparams may differ: a lowering fault).
void add(GapTally& tally, const at::Tensor& ours, const at::Tensor& theirs) {
  if (ours.sizes() != theirs.sizes() || ours.q_scale() < kNoiseStep) return;
  at::Tensor steps = ((theirs.dequantize() - ours.dequantize()) / ours.q_scale()).abs().round();
  tally.gap.steps = std::max(tally.gap.steps, steps.numel() ? steps.max().item<int64_t>() : 0);
  tally.off += steps.gt(1).sum().item<int64_t>();
  tally.elements += steps.numel();
}

}  // namespace

std::vector<KernelGap> kernel_gaps(const ir::GraphModule& reference, const ir::GraphModule& lowered,
                                   const std::vector<std::vector<c10::IValue>>& batches) {
  ir::Interpreter lowered_run(lowered);
  ir::Interpreter reference_run(reference);
  std::map<const ir::Node*, GapTally> tallies;  // by quantize node
  for (const std::vector<c10::IValue>& inputs : batches) {
    std::unordered_map<std::string, at::Tensor> theirs = lowered_values(lowered_run, inputs);
    reference_run.set_node_hook([&](const ir::Node& node, c10::IValue& value) {
      if (!is_quantize(node) || !per_tensor(value)) return;
      const ir::Node& op = *node.args()[0].to_node();
      if (auto kept = theirs.find(node.name()); kept != theirs.end()) {  // a quantize node lowering kept: the same op
        value = kept->second;
        return;
      }
      auto it = theirs.find(op.name());  // the op that took over the quantize node's value
      if (it == theirs.end()) return;
      GapTally& tally = tallies[&node];
      tally.gap.node = op.name();
      tally.gap.target = op.target();
      add(tally, value.toTensor(), it->second);
      value = it->second;
    });
    reference_run.run(inputs);
    reference_run.set_node_hook(nullptr);
  }
  std::vector<KernelGap> gaps;
  for (const ir::Node* node : reference.graph().nodes()) {
    auto it = tallies.find(node);
    if (it == tallies.end() || it->second.elements == 0) continue;
    KernelGap gap = it->second.gap;
    gap.off = static_cast<double>(it->second.off) / static_cast<double>(it->second.elements);
    gaps.push_back(gap);
  }
  return gaps;
}

}  // namespace qfx
