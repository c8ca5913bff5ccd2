#pragma once
/// \file
/// HistogramObserver (torch.ao.quantization.HistogramObserver): a running
/// histogram of the observed values, combined across batches by upsampling,
/// and qparams from the min/max that minimize the L2 quantization error.
///
/// Same results as PyTorch 1.13, bit for bit, except where 1.13 is wrong:
/// 1.13 truncates the histogram range with `int()` before `torch.histc`,
/// which drops values outside (-1, 1); qfx uses the exact range, as PyTorch
/// fixed later (docs/divergences.md).

#include "qfx/quant/observer_base.h"

#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>

#include <cmath>
#include <utility>

namespace qfx::quant {

/// Options of HistogramObserver.
struct HistogramObserverOptions {
  /// Number of histogram bins.
  TORCH_ARG(int64_t, bins) = 2048;
  /// How finely histograms are resampled when the range grows.
  TORCH_ARG(int64_t, upsample_rate) = 128;
  QFX_UNIFORM_OBSERVER_ARGS(c10::kQUInt8, c10::kPerTensorAffine);
};

/// Records a running histogram with its min and max.
class HistogramObserverImpl : public torch::nn::Cloneable<HistogramObserverImpl>, public UniformObserverBase {
 public:
  explicit HistogramObserverImpl(HistogramObserverOptions options = {});
  void reset() override;
  at::Tensor forward(const at::Tensor& x) override;
  QParams calculate_qparams() override;

  HistogramObserverOptions options;
  at::Tensor histogram;
  at::Tensor min_val;
  at::Tensor max_val;

 private:
  void start_histogram(const at::Tensor& x, const at::Tensor& lo, const at::Tensor& hi);
  void grow_histogram(const at::Tensor& x, const at::Tensor& lo, const at::Tensor& hi);
  bool add_if_inside(const at::Tensor& x, float current_min, float current_max);
  bool warned_non_finite_ = false;
  // Whether _adjust_min_max keeps the range kept_range_ (computed once per range).
  std::pair<float, float> kept_range_{NAN, NAN};
  bool range_is_kept_ = false;
};
TORCH_MODULE(HistogramObserver);

}  // namespace qfx::quant
