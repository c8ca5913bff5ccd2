#pragma once
// torch.histc as HistogramObserver and the calibration observers run it:
// at::histc's LINEAR_INTERPOLATION binning in float math, as loops (SSE2,
// and AVX2 chosen at run time).

#include <ATen/core/Tensor.h>

#include <optional>

namespace qfx::quant::detail {

/// Whether histc bins eight elements at a time, and quantization_error
/// (histogram_math.h) computes eight bins' norms at a time, with AVX2 (on by default when the
/// CPU has it); tests switch it off to check the SSE2 / scalar paths too.
bool& histc_uses_avx2();

/// `torch.histc(x, bins, min, max)` for a float32 tensor: the histogram as a
/// float32 tensor of `bins` counts.
at::Tensor histc(const at::Tensor& x, int64_t bins, double min, double max);

/// `histc(x, bins, min, max)` when every element of x lies in [min, max] (a
/// finite range), in one pass; nullopt as soon as one does not, is NaN, or
/// is the other zero than a bound of 0 (which would replace the bound).
std::optional<at::Tensor> histc_inside(const at::Tensor& x, int64_t bins, float min, float max);

}  // namespace qfx::quant::detail
