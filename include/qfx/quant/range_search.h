#pragma once
/// \file
/// How the calibration observers (calibration_observers.h) choose a clipping
/// range from a histogram: percentile, entropy (TensorRT's KL divergence
/// method) and MSE. The histogram is read as a piecewise-linear cumulative
/// distribution (counts spread evenly inside each bin), so it can be resampled
/// onto any range, folded into magnitudes, and merged.

#include <cstdint>
#include <utility>
#include <vector>

namespace qfx::quant {

/// Counts of values in `bins` equal-width bins over [lo, hi].
struct BinnedCounts {
  std::vector<double> counts;
  double lo = 0;
  double hi = 0;

  double width() const { return (hi - lo) / static_cast<double>(counts.size()); }
  double total() const;
  /// The value below which a fraction q of the values lie (linear inside a bin).
  double quantile(double q) const;
  /// The same distribution over `bins` bins of [lo, hi] (values outside are dropped).
  BinnedCounts resample(double lo, double hi, int64_t bins) const;
  /// The distribution of |x| over [0, max(|lo|, |hi|)], with as many bins.
  BinnedCounts magnitudes() const;
};

/// Histograms of disjoint parts of one data set as one histogram of `bins`
/// bins over the union of their ranges. A part over the union range adds its
/// counts as they are; another is resampled onto it (spread evenly inside
/// each bin); a part whose range is one point adds its mass to that point's
/// bin; empty parts add nothing. Each bin sums the parts' counts in
/// ascending order, so the result does not depend on the parts' order.
/// Integer counts over equal ranges merge exactly.
BinnedCounts merge_histograms(const std::vector<BinnedCounts>& parts, int64_t bins);

/// The integer grid a range is quantized to: [quant_min, quant_max], and for
/// symmetric schemes the fixed zero point.
struct QuantGrid {
  int64_t quant_min = 0;
  int64_t quant_max = 255;
  bool symmetric = false;
  int64_t symmetric_zero_point = 0;
  double eps = 1.1920928955078125e-07;
};

/// The range between the (100 - p)th and the pth percentiles; for symmetric
/// grids, within the pth percentile of |x|.
std::pair<double, double> percentile_range(const BinnedCounts& h, double percentile, bool symmetric);

/// TensorRT's entropy calibration: the threshold T whose clipped histogram
/// (|x| for signed data or symmetric grids, x for non-negative data),
/// quantized into the grid's levels, loses the least information (KL
/// divergence), as NVIDIA's pytorch-quantization `_compute_amax_entropy`.
/// The range is the data's range clipped to [-T, T].
std::pair<double, double> entropy_range(const BinnedCounts& h, const QuantGrid& grid);

/// The threshold of entropy_range for a histogram of magnitudes over [0, hi]
/// quantized into `levels` levels: the edge of the best number of bins.
double entropy_threshold(const BinnedCounts& magnitudes, int64_t levels);

/// The range whose quantization on `grid` has the least expected squared
/// error over the histogram (clipping error plus rounding noise of step²/12):
/// the data's range scaled by 1/100 ... 100/100, then each end refined alone.
std::pair<double, double> mse_range(const BinnedCounts& h, const QuantGrid& grid);

/// The expected squared error of quantizing the histogram's values with the
/// qparams `grid` gives the range [lo, hi].
double expected_squared_error(const BinnedCounts& h, const QuantGrid& grid, double lo, double hi);

}  // namespace qfx::quant
