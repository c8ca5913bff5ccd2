// HistogramObserver: PyTorch 1.13's forward/_adjust_min_max/calculate_qparams
// with the heavy kernels in histogram_math.cpp. The scalar steps stay ATen ops
// on 0-dim tensors, as in Python, so every rounding is the same.

#include "qfx/quant/histogram_observer.h"

#include "histc.h"
#include "histogram_math.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cmath>

namespace qfx::quant {

HistogramObserverImpl::HistogramObserverImpl(HistogramObserverOptions options)
    : UniformObserverBase(UniformObserverOptions::of(options), "HistogramObserver"), options(options) {
  TORCH_CHECK(is_per_tensor(options.qscheme()),
              "HistogramObserver's qscheme must be torch.per_tensor_symmetric or torch.per_tensor_affine, not ",
              qscheme_name(options.qscheme()));
  TORCH_CHECK(options.bins() > 0 && options.upsample_rate() > 0,
              "HistogramObserver: bins and upsample_rate must be positive");
  // Widening the range resamples bins x upsample_rate values.
  TORCH_CHECK(options.bins() <= (int64_t{1} << 20) && options.upsample_rate() <= (int64_t{1} << 26) / options.bins(),
              "HistogramObserver: bins (", options.bins(), ") times upsample_rate (", options.upsample_rate(),
              ") must be at most 2^26, bins at most 2^20");
  reset();
}

void HistogramObserverImpl::reset() {
  register_eps();
  histogram = register_buffer("histogram", at::zeros({options.bins()}, at::kFloat));
  min_val = register_buffer("min_val", at::scalar_tensor(INFINITY, at::kFloat));
  max_val = register_buffer("max_val", at::scalar_tensor(-INFINITY, at::kFloat));
}

void HistogramObserverImpl::start_histogram(const at::Tensor& x, const at::Tensor& lo, const at::Tensor& hi) {
  min_val.copy_(lo);
  max_val.copy_(hi);
  histogram.copy_(detail::histc(x, options.bins(), lo.item<double>(), hi.item<double>()));
}

namespace {

/// A one-element buffer's value: read in place when it is a float32 CPU
/// tensor (`item()` is a dispatched op, and forward reads two per batch).
float value_of(const at::Tensor& buffer) {
  if (buffer.device().is_cpu() && buffer.scalar_type() == at::kFloat && buffer.numel() == 1) {
    return *buffer.data_ptr<float>();
  }
  return buffer.item<float>();
}

// HistogramObserver._adjust_min_max: the combined range widened so that it is
// a whole number of the current histogram's upsampled bins.
struct AdjustedRange {
  at::Tensor min;
  at::Tensor max;
  int64_t downsample_rate;
  int64_t start_idx;
};

AdjustedRange adjust_min_max(const at::Tensor& combined_min, const at::Tensor& combined_max, const at::Tensor& min_val,
                             const at::Tensor& max_val, int64_t bins, int64_t upsample_rate) {
  at::Tensor hist_bin_width = (max_val - min_val) / (bins * upsample_rate);
  auto downsample_rate =
      static_cast<int64_t>(at::ceil((combined_max - combined_min) / (bins * hist_bin_width)).item<double>());
  at::Tensor e = downsample_rate * (bins * hist_bin_width) - (combined_max - combined_min);
  auto start_idx = static_cast<int64_t>(at::round((min_val - combined_min) / hist_bin_width).item<double>());
  return {combined_min, combined_max + e, downsample_rate, start_idx};
}

}  // namespace

// The new batch widens the range: the old histogram is resampled onto the
// combined range (HistogramObserver._adjust_min_max and _combine_histograms).
void HistogramObserverImpl::grow_histogram(const at::Tensor& x, const at::Tensor& lo, const at::Tensor& hi) {
  const int64_t bins = options.bins();
  AdjustedRange combined =
      adjust_min_max(at::min(lo, min_val), at::max(hi, max_val), min_val, max_val, bins, options.upsample_rate());
  at::Tensor counts = detail::histc(x, bins, combined.min.item<double>(), combined.max.item<double>());
  if (at::equal(combined.min, min_val) && at::equal(combined.max, max_val)) {
    counts += histogram;
  } else {
    counts = detail::combine_histograms(counts, histogram, options.upsample_rate(), combined.downsample_rate,
                                        combined.start_idx, bins);
  }
  histogram.copy_(counts);
  min_val.copy_(combined.min);
  max_val.copy_(combined.max);
}

// When every element of the batch lies in [min_val, max_val], Python's forward
// combines an unchanged range; if _adjust_min_max keeps that range (its
// rounding term can move max_val), the batch's counts over it are added to
// the histogram. That is decided before the data is read, so the batch is
// read once instead of twice (aminmax, then histc). False when an element
// lies outside or the range would move, with nothing changed.
bool HistogramObserverImpl::add_if_inside(const at::Tensor& x, float current_min, float current_max) {
  if (current_min != kept_range_.first || current_max != kept_range_.second) {
    AdjustedRange same = adjust_min_max(min_val, max_val, min_val, max_val, options.bins(), options.upsample_rate());
    range_is_kept_ = at::equal(same.min, min_val) && at::equal(same.max, max_val);
    kept_range_ = {current_min, current_max};
  }
  if (!range_is_kept_) return false;
  std::optional<at::Tensor> counts = detail::histc_inside(x, options.bins(), current_min, current_max);
  if (!counts) return false;
  histogram.add_(*counts);  // counts + histogram, as Python adds them (addition commutes)
  return true;
}

at::Tensor HistogramObserverImpl::forward(const at::Tensor& x_orig) {
  if (x_orig.numel() == 0) return x_orig;
  at::Tensor x = x_orig.detach().to(at::kFloat);
  float current_min = value_of(min_val);
  float current_max = value_of(max_val);
  bool uninitialized = current_min == INFINITY && current_max == -INFINITY;
  bool started = !uninitialized && current_min != current_max;
  if (started && add_if_inside(x, current_min, current_max)) return x_orig;
  auto [lo, hi] = at::aminmax(x);
  if (!std::isfinite(value_of(lo)) || !std::isfinite(value_of(hi))) {
    warn_non_finite(*this, warned_non_finite_);
    x = x.masked_select(at::isfinite(x));
    if (x.numel() == 0) return x_orig;
    std::tie(lo, hi) = at::aminmax(x);
  }
  if (started) {
    grow_histogram(x, lo, hi);
  } else {
    start_histogram(x, lo, hi);
  }
  return x_orig;
}

QParams HistogramObserverImpl::calculate_qparams() {
  if (min_val.item<float>() == INFINITY && max_val.item<float>() == -INFINITY) return no_data_qparams(*this);
  TORCH_CHECK(histogram.numel() == options.bins(), "HistogramObserver: the histogram has ", histogram.numel(),
              " bins, not ", options.bins());
  const int64_t dst_nbins = int64_t{1} << c10::elementSize(c10::toUnderlying(options.dtype())) * 8;
  auto [new_min, new_max] =
      detail::non_linear_param_search(histogram, min_val.item<float>(), max_val.item<float>(), dst_nbins);
  return calculate_qparams_from(at::scalar_tensor(new_min, at::kFloat), at::scalar_tensor(new_max, at::kFloat));
}

}  // namespace qfx::quant
