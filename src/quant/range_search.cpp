// Range choices of the calibration observers, on a histogram read as a
// piecewise-linear cumulative distribution.

#include "qfx/quant/range_search.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace qfx::quant {
namespace {

/// prefix[k]: how many values lie in the bins before k (k = 0 ... bins).
std::vector<double> prefix_sums(const std::vector<double>& counts) {
  std::vector<double> prefix(counts.size() + 1, 0.0);
  std::partial_sum(counts.begin(), counts.end(), prefix.begin() + 1);
  return prefix;
}

/// cdf(v) given the prefix sums.
double cdf_of(const BinnedCounts& h, const std::vector<double>& prefix, double v) {
  if (v <= h.lo || h.counts.empty()) return 0.0;
  if (v >= h.hi) return prefix.back();
  double position = (v - h.lo) / h.width();
  auto k = std::min(static_cast<size_t>(position), h.counts.size() - 1);
  return prefix[k] + h.counts[k] * (position - static_cast<double>(k));
}

}  // namespace

double BinnedCounts::total() const { return std::accumulate(counts.begin(), counts.end(), 0.0); }

double BinnedCounts::quantile(double q) const {
  std::vector<double> prefix = prefix_sums(counts);
  double target = std::clamp(q, 0.0, 1.0) * prefix.back();
  for (size_t k = 0; k < counts.size(); ++k) {
    if (prefix[k + 1] >= target && counts[k] > 0) {
      return lo + (static_cast<double>(k) + (target - prefix[k]) / counts[k]) * width();
    }
  }
  return hi;
}

BinnedCounts BinnedCounts::resample(double new_lo, double new_hi, int64_t bins) const {
  std::vector<double> prefix = prefix_sums(counts);
  BinnedCounts out{std::vector<double>(static_cast<size_t>(bins), 0.0), new_lo, new_hi};
  double step = (new_hi - new_lo) / static_cast<double>(bins);
  double below = cdf_of(*this, prefix, new_lo);
  for (int64_t k = 0; k < bins; ++k) {
    double edge = k + 1 == bins ? new_hi : new_lo + static_cast<double>(k + 1) * step;
    double upto = cdf_of(*this, prefix, edge);
    out.counts[static_cast<size_t>(k)] = upto - below;
    below = upto;
  }
  return out;
}

namespace {

/// `part`'s counts on `bins` bins over [lo, hi], which contains its range.
std::vector<double> counts_on(const BinnedCounts& part, double lo, double hi, int64_t bins) {
  if (part.lo == lo && part.hi == hi && static_cast<int64_t>(part.counts.size()) == bins) return part.counts;
  if (part.hi > part.lo) return part.resample(lo, hi, bins).counts;
  std::vector<double> counts(static_cast<size_t>(bins), 0.0);  // a point mass
  const double position = hi > lo ? (part.lo - lo) / (hi - lo) * static_cast<double>(bins) : 0.0;
  counts[static_cast<size_t>(std::clamp<int64_t>(static_cast<int64_t>(position), 0, bins - 1))] = part.total();
  return counts;
}

}  // namespace

BinnedCounts merge_histograms(const std::vector<BinnedCounts>& parts, int64_t bins) {
  TORCH_CHECK(bins > 0, "merge_histograms: bins must be positive, not ", bins);
  std::vector<const BinnedCounts*> filled;
  for (const BinnedCounts& part : parts) {
    if (part.total() > 0 && std::isfinite(part.lo) && std::isfinite(part.hi)) filled.push_back(&part);
  }
  BinnedCounts out{std::vector<double>(static_cast<size_t>(bins), 0.0), INFINITY, -INFINITY};
  if (filled.empty()) return out;
  for (const BinnedCounts* part : filled) {
    out.lo = std::min(out.lo, part->lo);
    out.hi = std::max(out.hi, part->hi);
  }
  std::vector<std::vector<double>> spread;
  for (const BinnedCounts* part : filled) spread.push_back(counts_on(*part, out.lo, out.hi, bins));
  std::vector<double> column(spread.size());
  for (size_t k = 0; k < out.counts.size(); ++k) {
    for (size_t p = 0; p < spread.size(); ++p) column[p] = spread[p][k];
    std::sort(column.begin(), column.end());
    out.counts[k] = std::accumulate(column.begin(), column.end(), 0.0);
  }
  return out;
}

BinnedCounts BinnedCounts::magnitudes() const {
  std::vector<double> prefix = prefix_sums(counts);
  const double top = std::max(std::abs(lo), std::abs(hi));
  const auto bins = counts.size();
  BinnedCounts out{std::vector<double>(bins, 0.0), 0.0, top};
  auto within = [&](double m) { return cdf_of(*this, prefix, m) - cdf_of(*this, prefix, -m); };
  double below = 0.0;
  for (size_t k = 0; k < bins; ++k) {
    double upto = within(top * static_cast<double>(k + 1) / static_cast<double>(bins));
    if (k + 1 == bins) upto = prefix.back();
    out.counts[k] = std::max(upto - below, 0.0);
    below = upto;
  }
  return out;
}

std::pair<double, double> percentile_range(const BinnedCounts& h, double percentile, bool symmetric) {
  const double q = percentile / 100.0;
  if (symmetric) {
    double t = h.magnitudes().quantile(q);
    return {std::max(h.lo, -t), std::min(h.hi, t)};
  }
  return {h.quantile(1.0 - q), h.quantile(q)};
}

double entropy_threshold(const BinnedCounts& magnitudes, int64_t levels) {
  std::vector<double> bins = magnitudes.counts;
  const auto n = static_cast<int64_t>(bins.size());
  TORCH_CHECK(n >= levels, "entropy calibration needs at least ", levels, " bins, not ", n);
  if (n > 1) bins[0] = bins[1];  // as TensorRT: the spike of zeros (ReLU) would dominate the first level
  std::vector<double> outliers(bins.size() + 1, 0.0);  // outliers[i]: the counts from bin i on
  for (int64_t i = n - 1; i >= 0; --i) outliers[i] = outliers[i + 1] + bins[i];
  std::vector<double> level_sum(levels);
  std::vector<int64_t> level_nonzero(levels);
  double best = std::numeric_limits<double>::infinity();
  int64_t best_i = n;
  for (int64_t i = levels; i <= n; ++i) {
    // Q: bins[0, i) merged into `levels` levels, each level's count spread over its non-empty bins
    std::fill(level_sum.begin(), level_sum.end(), 0.0);
    std::fill(level_nonzero.begin(), level_nonzero.end(), 0);
    for (int64_t b = 0; b < i; ++b) {
      if (bins[b] == 0) continue;
      level_sum[b * levels / i] += bins[b];
      level_nonzero[b * levels / i] += 1;
    }
    // P: bins[0, i) with the outliers added to the last bin; both normalized
    double p_total = outliers[0];
    double q_total = outliers[0] - outliers[i];
    double divergence = 0.0;
    for (int64_t b = 0; b < i && divergence < best; ++b) {
      double p = (bins[b] + (b == i - 1 ? outliers[i] : 0.0)) / p_total;
      if (p == 0) continue;
      int64_t level = b * levels / i;
      double q = bins[b] == 0 ? 0.0 : level_sum[level] / level_nonzero[level] / q_total;
      divergence += q == 0 ? std::numeric_limits<double>::infinity() : p * std::log(p / q);
    }
    if (divergence <= best) {  // the last of equal minima, as TensorRT
      best = divergence;
      best_i = i;
    }
  }
  return magnitudes.lo + static_cast<double>(best_i) * magnitudes.width();
}

std::pair<double, double> entropy_range(const BinnedCounts& h, const QuantGrid& grid) {
  if (!(h.hi > h.lo)) return {h.lo, h.hi};
  const bool non_negative = h.lo >= 0;
  const int64_t grid_levels = grid.quant_max - grid.quant_min + 1;
  const int64_t levels = grid.symmetric || !non_negative ? grid_levels / 2 : grid_levels;
  const auto bins = static_cast<int64_t>(h.counts.size());
  BinnedCounts magnitudes = non_negative ? h.resample(0.0, h.hi, bins) : h.magnitudes();
  double t = entropy_threshold(magnitudes, levels);
  return {std::max(h.lo, -t), std::min(h.hi, t)};
}

double expected_squared_error(const BinnedCounts& h, const QuantGrid& grid, double lo, double hi) {
  const double a = std::min(lo, 0.0);
  const double b = std::max(hi, 0.0);
  const auto qmin = static_cast<double>(grid.quant_min);
  const auto qmax = static_cast<double>(grid.quant_max);
  double scale = 0;
  double zero_point = 0;
  if (grid.symmetric) {
    scale = std::max(std::max(-a, b) / ((qmax - qmin) / 2.0), grid.eps);
    zero_point = static_cast<double>(grid.symmetric_zero_point);
  } else {
    scale = std::max((b - a) / (qmax - qmin), grid.eps);
    zero_point = std::clamp(qmin - std::nearbyint(a / scale), qmin, qmax);
  }
  const double clip_lo = (qmin - zero_point) * scale;
  const double clip_hi = (qmax - zero_point) * scale;
  const double rounding = scale * scale / 12.0;
  double error = 0;
  for (size_t k = 0; k < h.counts.size(); ++k) {
    if (h.counts[k] == 0) continue;
    double center = h.lo + (static_cast<double>(k) + 0.5) * h.width();
    double clipped = center < clip_lo ? clip_lo - center : center > clip_hi ? center - clip_hi : 0.0;
    error += h.counts[k] * (clipped != 0 ? clipped * clipped : rounding);
  }
  double total = h.total();
  return total > 0 ? error / total : 0.0;
}

std::pair<double, double> mse_range(const BinnedCounts& h, const QuantGrid& grid) {
  constexpr int kSteps = 100;
  std::pair<double, double> best{h.lo, h.hi};
  double best_error = expected_squared_error(h, grid, h.lo, h.hi);
  auto consider = [&](double lo, double hi) {
    double error = expected_squared_error(h, grid, lo, hi);
    if (error < best_error) {
      best_error = error;
      best = {lo, hi};
    }
  };
  for (int k = 1; k < kSteps; ++k) consider(h.lo * k / kSteps, h.hi * k / kSteps);
  if (!grid.symmetric && h.lo < 0 && h.hi > 0) {
    const std::pair<double, double> scaled = best;
    for (int k = 1; k <= kSteps; ++k) consider(h.lo * k / kSteps, scaled.second);
    const double lo = best.first;
    for (int k = 1; k <= kSteps; ++k) consider(lo, h.hi * k / kSteps);
  }
  return best;
}

}  // namespace qfx::quant
