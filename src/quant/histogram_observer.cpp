// HistogramObserver: PyTorch 1.13's forward/_adjust_min_max/calculate_qparams
// with the heavy kernels in histogram_math.cpp. The scalar steps stay ATen ops
// on 0-dim tensors, as in Python, so every rounding is the same.

#include "qfx/quant/histogram_observer.h"

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
  TORCH_CHECK(options.bins() > 0 && options.upsample_rate() > 0, "HistogramObserver: bins and upsample_rate must be positive");
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

// The new batch widens the range: the old histogram is resampled onto the
// combined range (HistogramObserver._adjust_min_max and _combine_histograms).
void HistogramObserverImpl::grow_histogram(const at::Tensor& x, const at::Tensor& lo, const at::Tensor& hi) {
  const int64_t bins = options.bins();
  const int64_t upsample_rate = options.upsample_rate();
  at::Tensor combined_min = at::min(lo, min_val);
  at::Tensor combined_max = at::max(hi, max_val);
  at::Tensor hist_bin_width = (max_val - min_val) / (bins * upsample_rate);
  auto downsample_rate = static_cast<int64_t>(
      at::ceil((combined_max - combined_min) / (bins * hist_bin_width)).item<double>());
  at::Tensor e = downsample_rate * (bins * hist_bin_width) - (combined_max - combined_min);
  combined_max = combined_max + e;
  auto start_idx = static_cast<int64_t>(at::round((min_val - combined_min) / hist_bin_width).item<double>());
  at::Tensor combined = detail::histc(x, bins, combined_min.item<double>(), combined_max.item<double>());
  if (at::equal(combined_min, min_val) && at::equal(combined_max, max_val)) {
    combined += histogram;
  } else {
    combined = detail::combine_histograms(combined, histogram, upsample_rate, downsample_rate, start_idx, bins);
  }
  histogram.copy_(combined);
  min_val.copy_(combined_min);
  max_val.copy_(combined_max);
}

at::Tensor HistogramObserverImpl::forward(const at::Tensor& x_orig) {
  if (x_orig.numel() == 0) return x_orig;
  at::Tensor x = x_orig.detach().to(at::kFloat);
  auto [lo, hi] = at::aminmax(x);
  if (!std::isfinite(lo.item<float>()) || !std::isfinite(hi.item<float>())) {
    warn_non_finite(*this, warned_non_finite_);
    x = x.masked_select(at::isfinite(x));
    if (x.numel() == 0) return x_orig;
    std::tie(lo, hi) = at::aminmax(x);
  }
  float current_min = min_val.item<float>();
  float current_max = max_val.item<float>();
  bool uninitialized = current_min == INFINITY && current_max == -INFINITY;
  if (uninitialized || current_min == current_max) {
    start_histogram(x, lo, hi);
  } else {
    grow_histogram(x, lo, hi);
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
