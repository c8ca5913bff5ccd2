// The calibration observers: a bounded running histogram per tensor or
// channel, and a range chosen from it (range_search.cpp).

#include "qfx/quant/calibration_observers.h"

#include "histc.h"
#include "qfx/quant/range_search.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>

namespace qfx::quant {
namespace {

/// `x` as rows: one per channel of `ch_axis`, or one row.
at::Tensor rows_of(const at::Tensor& x, bool per_channel, int64_t ch_axis) {
  if (!per_channel) return x.reshape({1, -1});
  TORCH_CHECK(x.dim() > 0, "a per-channel observer needs a tensor with a channel axis, got a scalar");
  int64_t axis = ch_axis < 0 ? ch_axis + x.dim() : ch_axis;
  TORCH_CHECK(axis >= 0 && axis < x.dim(), "ch_axis ", ch_axis, " is out of range for a ", x.dim(), "-d tensor");
  return x.movedim(axis, 0).reshape({x.size(axis), -1});
}

/// A row's counts as BinnedCounts.
BinnedCounts binned(const at::Tensor& row, double lo, double hi) {
  at::Tensor counts = row.contiguous();
  const double* data = counts.data_ptr<double>();
  return {std::vector<double>(data, data + counts.numel()), lo, hi};
}

/// Counts of `values` in `bins` bins over [lo, hi] (all in the first bin
/// when the range is one point), as float64.
at::Tensor counts_over(const at::Tensor& values, int64_t bins, double lo, double hi) {
  if (hi > lo) return detail::histc(values, bins, lo, hi).to(at::kDouble);
  at::Tensor counts = at::zeros({bins}, at::kDouble);
  counts[0] = static_cast<double>(values.numel());
  return counts;
}

/// The counts of a histogram over [old_lo, old_hi] moved onto `bins` bins
/// over [lo, hi], which contains the old range.
at::Tensor moved_counts(const at::Tensor& old, double old_lo, double old_hi, double lo, double hi) {
  const int64_t bins = old.numel();
  if (old_hi > old_lo) {
    BinnedCounts resampled = binned(old, old_lo, old_hi).resample(lo, hi, bins);
    return at::tensor(resampled.counts, at::kDouble);
  }
  at::Tensor counts = at::zeros({bins}, at::kDouble);  // a point mass at old_lo
  auto bin = static_cast<int64_t>((old_lo - lo) / (hi - lo) * static_cast<double>(bins));
  counts[std::clamp<int64_t>(bin, 0, bins - 1)] = old.sum().item<double>();
  return counts;
}

}  // namespace

CalibrationObserver::CalibrationObserver(RangeMethod method, CalibrationObserverOptions options, const char* class_name)
    : UniformObserverBase(UniformObserverOptions::of(options), class_name),
      options(options),
      method_(method),
      per_channel_(!is_per_tensor(options.qscheme())) {
  TORCH_CHECK(options.bins() > 0 && options.bins() <= (int64_t{1} << 20), class_name,
              ": bins must be in [1, 2^20], not ", options.bins());
  TORCH_CHECK(options.percentile() > 50 && options.percentile() <= 100, class_name,
              ": percentile must be in (50, 100], not ", options.percentile());
  const int64_t levels = quant_range_.second - quant_range_.first + 1;
  TORCH_CHECK(method != RangeMethod::kEntropy || options.bins() >= levels, class_name, ": bins must be at least ",
              levels, " (the quantization levels), not ", options.bins());
}

void CalibrationObserver::register_state() {
  register_eps();
  histogram = register_buffer("histogram", at::zeros({0, options.bins()}, at::kDouble));
  min_val = register_buffer("min_val", per_channel_ ? at::empty({0}) : at::scalar_tensor(INFINITY, at::kFloat));
  max_val = register_buffer("max_val", per_channel_ ? at::empty({0}) : at::scalar_tensor(-INFINITY, at::kFloat));
}

at::Tensor CalibrationObserver::forward(const at::Tensor& x_orig) {
  if (x_orig.numel() == 0) return x_orig;
  at::NoGradGuard no_grad;
  at::Tensor rows = rows_of(x_orig.detach().to(at::kFloat), per_channel_, options.ch_axis()).contiguous();
  if (histogram.size(0) == 0) {
    histogram.set_(at::zeros({rows.size(0), options.bins()}, at::kDouble));
    if (per_channel_) {
      min_val.set_(at::full({rows.size(0)}, INFINITY, at::kFloat));
      max_val.set_(at::full({rows.size(0)}, -INFINITY, at::kFloat));
    }
  }
  TORCH_CHECK(histogram.size(0) == rows.size(0), describe(), ": observed ", histogram.size(0), " channels, then ",
              rows.size(0));
  for (int64_t r = 0; r < rows.size(0); ++r) observe_row(r, rows[r]);
  return x_orig;
}

void CalibrationObserver::observe_row(int64_t row, const at::Tensor& row_values) {
  at::Tensor values = row_values;
  if (!at::isfinite(values).all().item<bool>()) {
    warn_non_finite(*this, warned_non_finite_);
    values = values.masked_select(at::isfinite(values));
    if (values.numel() == 0) return;
  }
  float* lows = min_val.data_ptr<float>();
  float* highs = max_val.data_ptr<float>();
  auto [lo_t, hi_t] = at::aminmax(values);
  const double old_lo = lows[row];
  const double old_hi = highs[row];
  const bool first = std::isinf(old_lo) && old_lo > 0;
  const double lo = first ? lo_t.item<float>() : std::min<double>(old_lo, lo_t.item<float>());
  const double hi = first ? hi_t.item<float>() : std::max<double>(old_hi, hi_t.item<float>());
  at::Tensor counts = counts_over(values, options.bins(), lo, hi);
  at::Tensor old = histogram[row];
  if (!first) counts += lo == old_lo && hi == old_hi ? old : moved_counts(old, old_lo, old_hi, lo, hi);
  old.copy_(counts);
  lows[row] = static_cast<float>(lo);
  highs[row] = static_cast<float>(hi);
}

std::pair<double, double> CalibrationObserver::choose(int64_t row) const {
  const double lo = min_val.reshape({-1})[row].item<double>();
  const double hi = max_val.reshape({-1})[row].item<double>();
  if (!(hi > lo)) return {lo, hi};
  BinnedCounts h = binned(histogram[row], lo, hi);
  QuantGrid grid{quant_range_.first, quant_range_.second, is_symmetric(qscheme()), symmetric_zero_point(), eps()};
  switch (method_) {
    case RangeMethod::kPercentile: return percentile_range(h, options.percentile(), grid.symmetric);
    case RangeMethod::kEntropy: return entropy_range(h, grid);
    case RangeMethod::kMse: break;
  }
  return mse_range(h, grid);
}

std::pair<at::Tensor, at::Tensor> CalibrationObserver::chosen_range() const {
  const int64_t rows = histogram.size(0);
  at::Tensor lo = at::empty({rows}, at::kFloat);
  at::Tensor hi = at::empty({rows}, at::kFloat);
  for (int64_t r = 0; r < rows; ++r) {
    auto [a, b] = choose(r);
    lo[r] = a;
    hi[r] = b;
  }
  if (per_channel_) return {lo, hi};
  return {lo.reshape({}), hi.reshape({})};
}

QParams CalibrationObserver::calculate_qparams() {
  if (min_val.numel() == 0 || std::isinf(min_val.reshape({-1})[0].item<float>())) return no_data_qparams(*this);
  auto [lo, hi] = chosen_range();
  return calculate_qparams_from(lo, hi);
}

PercentileObserverImpl::PercentileObserverImpl(CalibrationObserverOptions options)
    : CalibrationObserver(RangeMethod::kPercentile, options, "PercentileObserver") {
  reset();
}

EntropyObserverImpl::EntropyObserverImpl(CalibrationObserverOptions options)
    : CalibrationObserver(RangeMethod::kEntropy, options, "EntropyObserver") {
  reset();
}

MSEObserverImpl::MSEObserverImpl(CalibrationObserverOptions options)
    : CalibrationObserver(RangeMethod::kMse, options, "MSEObserver") {
  reset();
}

}  // namespace qfx::quant
