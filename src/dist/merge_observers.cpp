// Observer statistics merged across ranks: one rule per observer class, in
// graph order (the same on every rank).

#include "qfx/distributed.h"
#include "qfx/ir/graph_module.h"
#include "qfx/quant/min_max_observers.h"
#include "qfx/quant/simple_observers.h"

#include <ATen/ATen.h>

#include <vector>

namespace qfx::dist {
namespace {

enum class Rule { kNone, kExtremes, kMean, kUnsupported };

Rule rule_of(const quant::ActivationPostProcess& observer) {
  if (dynamic_cast<const quant::MovingAverageMinMaxObserverImpl*>(&observer) != nullptr ||
      dynamic_cast<const quant::MovingAveragePerChannelMinMaxObserverImpl*>(&observer) != nullptr) {
    return Rule::kMean;
  }
  if (dynamic_cast<const quant::MinMaxStatsObserver*>(&observer) != nullptr) return Rule::kExtremes;
  if (dynamic_cast<const quant::PlaceholderObserverImpl*>(&observer) != nullptr ||
      dynamic_cast<const quant::FixedQParamsObserverImpl*>(&observer) != nullptr ||
      dynamic_cast<const quant::NoopObserverImpl*>(&observer) != nullptr ||
      dynamic_cast<const quant::ReuseInputObserverImpl*>(&observer) != nullptr) {
    return Rule::kNone;
  }
  return Rule::kUnsupported;
}

// The observers of `gm`'s call_module nodes, in graph order, with their node.
std::vector<std::pair<const ir::Node*, quant::ActivationPostProcess*>> observers_of(const ir::GraphModule& gm) {
  std::vector<std::pair<const ir::Node*, quant::ActivationPostProcess*>> out;
  for (const ir::Node* node : gm.graph().nodes()) {
    if (node->op() != ir::Opcode::kCallModule) continue;
    auto* observer = dynamic_cast<quant::ActivationPostProcess*>(gm.get_submodule(node->target()).get());
    if (observer != nullptr) out.emplace_back(node, observer);
  }
  return out;
}

// Every rank's statistics the same size: a rank that observed nothing has
// empty per-channel statistics; it takes `fill` of the others' size.
at::Tensor sized_like_others(const at::Tensor& values, double fill, ProcessGroup& group) {
  at::Tensor size = at::tensor({values.numel()}, at::kLong);
  group.all_reduce(size, ProcessGroup::Reduce::kMax);
  const int64_t n = size.item<int64_t>();
  if (values.numel() == n) return values.to(at::kFloat).reshape({-1}).clone();
  TORCH_CHECK(values.numel() == 0, "observer statistics of ", values.numel(), " and ", n, " values on two ranks");
  return at::full({n}, fill, at::kFloat);
}

// A statistics buffer set to `values` (1-D), in place (the module's buffer
// is the same tensor), 0-dim again for per-tensor statistics.
void assign(at::Tensor& buffer, const at::Tensor& values) {
  buffer.set_(buffer.dim() == 0 && values.numel() == 1 ? values.reshape({}) : values);
}

void merge_extremes(quant::MinMaxStatsObserver& o, ProcessGroup& group) {
  at::Tensor lo = sized_like_others(o.min_val, INFINITY, group);
  at::Tensor hi = sized_like_others(o.max_val, -INFINITY, group);
  group.all_reduce(lo, ProcessGroup::Reduce::kMin);
  group.all_reduce(hi, ProcessGroup::Reduce::kMax);
  if (lo.numel() == 0) return;  // no rank observed anything
  assign(o.min_val, lo);
  assign(o.max_val, hi);
}

// Mean over the ranks whose statistics are set (finite, not empty).
void merge_means(quant::MinMaxStatsObserver& o, ProcessGroup& group) {
  at::Tensor lo = sized_like_others(o.min_val, INFINITY, group);
  at::Tensor hi = sized_like_others(o.max_val, -INFINITY, group);
  const bool observed = lo.numel() > 0 && lo.isfinite().all().item<bool>() && hi.isfinite().all().item<bool>();
  at::Tensor count = at::tensor({observed ? 1.0f : 0.0f});
  group.all_reduce(count, ProcessGroup::Reduce::kSum);
  if (!observed) {
    lo.zero_();
    hi.zero_();
  }
  group.all_reduce(lo, ProcessGroup::Reduce::kSum);
  group.all_reduce(hi, ProcessGroup::Reduce::kSum);
  const float ranks = count.item<float>();
  if (ranks == 0) return;
  assign(o.min_val, lo.div(ranks));
  assign(o.max_val, hi.div(ranks));
}

}  // namespace

void check_mergeable(const ir::GraphModule& gm) {
  for (const auto& [node, observer] : observers_of(gm)) {
    TORCH_CHECK(rule_of(*observer) != Rule::kUnsupported, "distributed calibration: ", observer->describe(), " (node ",
                node->name(),
                ") has no merge across ranks; use MinMax, PerChannelMinMax or their "
                "MovingAverage forms in the qconfig");
  }
}

void merge_observers(ir::GraphModule& gm, ProcessGroup& group) {
  check_mergeable(gm);
  at::NoGradGuard no_grad;
  for (const auto& [node, observer] : observers_of(gm)) {
    auto* stats = dynamic_cast<quant::MinMaxStatsObserver*>(observer);
    switch (rule_of(*observer)) {
      case Rule::kExtremes: merge_extremes(*stats, group); break;
      case Rule::kMean: merge_means(*stats, group); break;
      default: break;
    }
  }
}

}  // namespace qfx::dist
