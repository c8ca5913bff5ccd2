// Observer statistics merged across ranks: one rule per observer class, in
// graph order (the same on every rank).

#include "qfx/dist/distributed.h"

#include "fake_quant_state.h"

#include "qfx/ir/graph_module.h"
#include "qfx/quant/calibration_observers.h"
#include "qfx/quant/fake_quantize.h"
#include "qfx/quant/histogram_observer.h"
#include "qfx/quant/min_max_observers.h"
#include "qfx/quant/simple_observers.h"

#include "qfx/quant/range_search.h"

#include <ATen/ATen.h>

#include <vector>

namespace qfx::dist {
namespace {

enum class Rule { kNone, kExtremes, kMean, kHistogram, kCalibrationHistogram, kUnsupported };

template <typename T>
bool is(const quant::ActivationPostProcess& observer) {
  return dynamic_cast<const T*>(&observer) != nullptr;
}

Rule rule_of(const quant::ActivationPostProcess& observer) {
  if (is<quant::MovingAverageMinMaxObserverImpl>(observer) ||
      is<quant::MovingAveragePerChannelMinMaxObserverImpl>(observer)) {
    return Rule::kMean;
  }
  if (is<quant::MinMaxStatsObserver>(observer)) return Rule::kExtremes;
  if (is<quant::HistogramObserverImpl>(observer)) return Rule::kHistogram;
  if (is<quant::CalibrationObserver>(observer)) return Rule::kCalibrationHistogram;
  if (is<quant::PlaceholderObserverImpl>(observer) || is<quant::FixedQParamsObserverImpl>(observer) ||
      is<quant::NoopObserverImpl>(observer) || is<quant::ReuseInputObserverImpl>(observer) ||
      is<quant::FixedQParamsFakeQuantizeImpl>(observer)) {
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

// A statistics buffer set to `values`, in place (the module's buffer is the
// same tensor), 0-dim again for per-tensor statistics.
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

// Histograms, one row per tensor or channel: `counts` [rows, bins] and the
// range of each row. Every rank's rows are gathered, then merged row by row;
// a rank that observed nothing contributes empty rows.
struct Histograms {
  at::Tensor counts;  // float64 [rows, bins]
  at::Tensor lo, hi;  // float64 [rows]
};

Histograms merged(const Histograms& mine, int64_t bins, ProcessGroup& group) {
  at::Tensor rows = at::tensor({mine.counts.size(0)}, at::kLong);
  group.all_reduce(rows, ProcessGroup::Reduce::kMax);
  const int64_t n = rows.item<int64_t>();
  at::Tensor packed = at::zeros({n, bins + 2}, at::kDouble);
  packed.select(1, 0).fill_(INFINITY);
  packed.select(1, 1).fill_(-INFINITY);
  if (mine.counts.size(0) == n) {
    packed.select(1, 0).copy_(mine.lo);
    packed.select(1, 1).copy_(mine.hi);
    packed.narrow(1, 2, bins).copy_(mine.counts);
  } else {
    TORCH_CHECK(mine.counts.size(0) == 0, "histograms of ", mine.counts.size(0), " and ", n, " rows on two ranks");
  }
  at::Tensor all = group.all_gather(packed).contiguous();  // [world, n, bins + 2]
  Histograms out{at::zeros({n, bins}, at::kDouble), at::empty({n}, at::kDouble), at::empty({n}, at::kDouble)};
  for (int64_t row = 0; row < n; ++row) {
    std::vector<quant::BinnedCounts> parts;
    for (int64_t r = 0; r < all.size(0); ++r) {
      const double* p = all[r][row].data_ptr<double>();
      parts.push_back({std::vector<double>(p + 2, p + 2 + bins), p[0], p[1]});
    }
    quant::BinnedCounts m = quant::merge_histograms(parts, bins);
    out.counts[row].copy_(at::tensor(m.counts, at::kDouble));
    out.lo[row] = m.lo;
    out.hi[row] = m.hi;
  }
  return out;
}

void merge_histogram(quant::HistogramObserverImpl& o, ProcessGroup& group) {
  const int64_t bins = o.options.bins();
  const bool observed = std::isfinite(o.min_val.item<float>());
  Histograms mine{observed ? o.histogram.to(at::kDouble).reshape({1, bins}) : at::zeros({0, bins}, at::kDouble),
                  o.min_val.to(at::kDouble).reshape({-1}), o.max_val.to(at::kDouble).reshape({-1})};
  if (!observed) mine.lo = mine.hi = at::empty({0}, at::kDouble);
  Histograms all = merged(mine, bins, group);
  if (!std::isfinite(all.lo.item<double>())) return;  // no rank observed anything
  o.histogram.copy_(all.counts[0].to(at::kFloat));
  o.min_val.fill_(all.lo.item<double>());
  o.max_val.fill_(all.hi.item<double>());
}

void merge_calibration_histogram(quant::CalibrationObserver& o, ProcessGroup& group) {
  const int64_t bins = o.options.bins();
  const bool observed = o.histogram.size(0) > 0;
  Histograms mine{o.histogram, o.min_val.to(at::kDouble).reshape({-1}), o.max_val.to(at::kDouble).reshape({-1})};
  if (!observed) mine.lo = mine.hi = at::empty({0}, at::kDouble);
  Histograms all = merged(mine, bins, group);
  if (all.counts.size(0) == 0 || !at::isfinite(all.lo).all().item<bool>()) return;
  o.histogram.set_(all.counts);
  assign(o.min_val, all.lo.to(at::kFloat));
  assign(o.max_val, all.hi.to(at::kFloat));
}

void merge_one(quant::ActivationPostProcess& observer, ProcessGroup& group) {
  quant::ActivationPostProcess& stats = detail::statistics_of(observer);
  switch (rule_of(stats)) {
    case Rule::kExtremes: merge_extremes(dynamic_cast<quant::MinMaxStatsObserver&>(stats), group); break;
    case Rule::kMean: merge_means(dynamic_cast<quant::MinMaxStatsObserver&>(stats), group); break;
    case Rule::kHistogram: merge_histogram(dynamic_cast<quant::HistogramObserverImpl&>(stats), group); break;
    case Rule::kCalibrationHistogram:
      merge_calibration_histogram(dynamic_cast<quant::CalibrationObserver&>(stats), group);
      break;
    case Rule::kNone:
    case Rule::kUnsupported: return;
  }
  detail::refresh_qparams(observer);
}

}  // namespace

void check_mergeable(const ir::GraphModule& gm) {
  for (const auto& [node, observer] : observers_of(gm)) {
    TORCH_CHECK(rule_of(detail::statistics_of(*observer)) != Rule::kUnsupported,
                "distributed calibration: ", observer->describe(), " (node ", node->name(),
                ") has no merge across ranks; use a MinMax, Histogram or qfx.observer calibration observer");
  }
}

void merge_observers(ir::GraphModule& gm, ProcessGroup& group) {
  check_mergeable(gm);
  at::NoGradGuard no_grad;
  for (const auto& [node, observer] : observers_of(gm)) merge_one(*observer, group);
}

void merge_observer(quant::ActivationPostProcess& observer, ProcessGroup& group) {
  TORCH_CHECK(rule_of(detail::statistics_of(observer)) != Rule::kUnsupported,
              "distributed calibration: ", observer.describe(), " has no merge across ranks");
  at::NoGradGuard no_grad;
  merge_one(observer, group);
}

}  // namespace qfx::dist
