#pragma once
/// \file
/// Calibration observers beside PyTorch's: PercentileObserver, EntropyObserver
/// (TensorRT's KL-divergence method) and MSEObserver, named
/// `qfx.observer.PercentileObserver` etc. in QConfig JSON. Each keeps a
/// running histogram per tensor, or per channel for the per-channel
/// qschemes (`ch_axis`), of `bins` bins over the range seen so far, so
/// calibration memory stays bounded; when a batch widens the range, the old
/// counts are resampled onto the new one (spread evenly inside each bin).
/// calculate_qparams() chooses a clipping range from the histogram and turns
/// it into qparams with PyTorch's formula (UniformObserverBase).
///
/// Example:
/// \code
///   PercentileObserver obs(CalibrationObserverOptions().percentile(99.9));
///   obs(torch::randn({64, 128}));
///   QParams q = obs->calculate_qparams();   // from the 0.1th and 99.9th percentiles
/// \endcode

#include "qfx/quant/observer_base.h"

#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>

#include <utility>

namespace qfx::quant {

/// Options of the calibration observers.
struct CalibrationObserverOptions {
  /// Histogram bins per tensor or channel (EntropyObserver needs at least as
  /// many as quantization levels).
  TORCH_ARG(int64_t, bins) = 2048;
  /// PercentileObserver: the range keeps this percentage of the values
  /// (the (100 - p)th to the pth percentile; symmetric schemes: of |x|).
  TORCH_ARG(double, percentile) = 99.99;
  /// The channel axis of per-channel qschemes.
  TORCH_ARG(int64_t, ch_axis) = 0;
  QFX_UNIFORM_OBSERVER_ARGS(c10::kQUInt8, c10::kPerTensorAffine);
};

/// How a calibration observer chooses its range from the histogram.
enum class RangeMethod { kPercentile, kEntropy, kMse };

/// The histogram and range choice the three observers share.
class CalibrationObserver : public UniformObserverBase {
 public:
  at::Tensor forward(const at::Tensor& x) override;
  QParams calculate_qparams() override;
  int64_t ch_axis() const override { return per_channel_ ? options.ch_axis() : -1; }
  /// The clipping range calculate_qparams quantizes: (min, max), 0-dim per
  /// tensor, 1-dim per channel.
  std::pair<at::Tensor, at::Tensor> chosen_range() const;

  CalibrationObserverOptions options;
  /// Counts, one row of `bins` per tensor or channel (float64).
  at::Tensor histogram;
  /// The range each row covers (what was seen).
  at::Tensor min_val;
  at::Tensor max_val;

 protected:
  CalibrationObserver(RangeMethod method, CalibrationObserverOptions options, const char* class_name);
  /// Registers eps, histogram, min_val and max_val (call from `reset()`).
  void register_state();

 private:
  void observe_row(int64_t row, const at::Tensor& values);
  std::pair<double, double> choose(int64_t row) const;

  RangeMethod method_;
  bool per_channel_;
  bool warned_non_finite_ = false;
};

/// Range from percentiles of the data (default 99.99).
class PercentileObserverImpl : public torch::nn::Cloneable<PercentileObserverImpl>, public CalibrationObserver {
 public:
  explicit PercentileObserverImpl(CalibrationObserverOptions options = {});
  void reset() override { register_state(); }
};
TORCH_MODULE(PercentileObserver);

/// Range from TensorRT's entropy (KL divergence) calibration.
class EntropyObserverImpl : public torch::nn::Cloneable<EntropyObserverImpl>, public CalibrationObserver {
 public:
  explicit EntropyObserverImpl(CalibrationObserverOptions options = {});
  void reset() override { register_state(); }
};
TORCH_MODULE(EntropyObserver);

/// Range with the least expected squared quantization error.
class MSEObserverImpl : public torch::nn::Cloneable<MSEObserverImpl>, public CalibrationObserver {
 public:
  explicit MSEObserverImpl(CalibrationObserverOptions options = {});
  void reset() override { register_state(); }
};
TORCH_MODULE(MSEObserver);

}  // namespace qfx::quant
