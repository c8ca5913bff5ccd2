#pragma once
// The numerical kernels of HistogramObserver, written as loops that give the
// same float32/float64 results as the ATen ops PyTorch 1.13 runs for them:
//
//   histc             at::histc's LINEAR_INTERPOLATION binning (float math)
//   histc_inside      histc that gives up at the first element outside the range
//   combine           _combine_histograms: upsample x U, place at start_idx,
//                     cumsum in double, take every D-th, difference, / U
//   param_search      _non_linear_param_search (the L2 "non-ideal" range
//                     search)
//   quantization_error _compute_quantization_error, one loop over the bins

#include <ATen/core/Tensor.h>

#include <optional>
#include <utility>

namespace qfx::quant::detail {

/// Whether histc bins eight elements at a time, and quantization_error
/// computes eight bins' norms at a time, with AVX2 (on by default when the
/// CPU has it); tests switch it off to check the SSE2 / scalar paths too.
bool& histc_uses_avx2();

/// `torch.histc(x, bins, min, max)` for a float32 tensor: the histogram as a
/// float32 tensor of `bins` counts.
at::Tensor histc(const at::Tensor& x, int64_t bins, double min, double max);

/// `histc(x, bins, min, max)` when every element of x lies in [min, max] (a
/// finite range), in one pass; nullopt as soon as one does not, is NaN, or
/// is the other zero than a bound of 0 (which would replace the bound).
std::optional<at::Tensor> histc_inside(const at::Tensor& x, int64_t bins, float min, float max);

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
