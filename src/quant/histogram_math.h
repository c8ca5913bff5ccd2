#pragma once
// The range search kernels of HistogramObserver (its histc is histc.h),
// written as loops that give the same float32/float64 results as the ATen
// ops PyTorch 1.13 runs for them:
//
//   combine           _combine_histograms: upsample x U, place at start_idx,
//                     cumsum in double, take every D-th, difference, / U
//   param_search      _non_linear_param_search (the L2 "non-ideal" range
//                     search)
//   quantization_error _compute_quantization_error, one loop over the bins

#include <ATen/core/Tensor.h>

#include <optional>
#include <utility>

namespace qfx::quant::detail {

/// `HistogramObserver._combine_histograms(orig_hist, new_hist, ...)`.
at::Tensor combine_histograms(const at::Tensor& orig_hist, const at::Tensor& new_hist, int64_t upsample_rate,
                              int64_t downsample_rate, int64_t start_idx, int64_t bins);

/// `HistogramObserver._compute_quantization_error(start_bin, end_bin)` for a
/// float32 histogram whose bins are `bin_width` wide (a Python float): the L2
/// error of quantizing bins [start_bin, end_bin] into `dst_nbins` levels.
double quantization_error(const at::Tensor& histogram, double bin_width, int64_t start_bin, int64_t end_bin,
                          int64_t dst_nbins);

/// `HistogramObserver._non_linear_param_search()`: the (min, max) that
/// minimize the L2 quantization error, for a histogram of [min_val, max_val].
std::pair<float, float> non_linear_param_search(const at::Tensor& histogram, float min_val, float max_val,
                                                int64_t dst_nbins);

}  // namespace qfx::quant::detail
