#pragma once
/// \file
/// The min/max observers of torch.ao.quantization.observer: MinMaxObserver,
/// MovingAverageMinMaxObserver, PerChannelMinMaxObserver and
/// MovingAveragePerChannelMinMaxObserver, with PyTorch's arguments and
/// defaults. Non-finite values (NaN, +-Inf) are left out of the statistics
/// with one warning (PyTorch lets them turn min/max into NaN).
///
/// Example:
/// \code
///   MinMaxObserver obs(MinMaxObserverOptions().dtype(c10::kQInt8).qscheme(c10::kPerTensorSymmetric));
///   obs(torch::randn({4, 16}));
///   QParams q = obs->calculate_qparams();
/// \endcode

#include "qfx/quant/observer_base.h"

#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>

namespace qfx::quant {

/// The running min/max and the qparams they give; the four observers below
/// differ in how forward() updates them.
class MinMaxStatsObserver : public UniformObserverBase {
 public:
  QParams calculate_qparams() override { return calculate_qparams_from(min_val, max_val); }
  /// Forgets what was observed.
  void reset_min_max_vals();

  at::Tensor min_val;
  at::Tensor max_val;

 protected:
  MinMaxStatsObserver(const UniformObserverOptions& options, const char* class_name, bool per_channel);
  /// Registers eps, min_val and max_val (call from `reset()`).
  void register_stats();
  /// Folds the range of batch `x` into min_val/max_val: the running min/max,
  /// or, given an averaging constant, PyTorch's moving average. Per-channel
  /// observers take the range per `ch_axis`. An empty batch, or one without
  /// finite values, leaves the statistics as they are.
  void observe(const at::Tensor& x, c10::optional<double> averaging_constant, int64_t ch_axis = 0);

  bool per_channel_;
  bool warned_non_finite_ = false;

 private:
  /// min/max of `x`, leaving out non-finite values; nullopt if none is left.
  c10::optional<std::pair<at::Tensor, at::Tensor>> finite_aminmax(const at::Tensor& x);
  /// Per-channel min/max of the rows of `rows` (channels x values).
  std::pair<at::Tensor, at::Tensor> finite_row_aminmax(const at::Tensor& rows);
  /// `x` as rows of channel values (`ch_axis` first, then flattened).
  static at::Tensor channel_rows(const at::Tensor& x, int64_t ch_axis);
  bool is_uninitialized() const;
  /// Stores a new min/max (resizing per-channel buffers as needed).
  void store(const at::Tensor& lo, const at::Tensor& hi);
};

/// Options of MinMaxObserver.
struct MinMaxObserverOptions {
  QFX_UNIFORM_OBSERVER_ARGS(c10::kQUInt8, c10::kPerTensorAffine);
};

/// Records the running minimum and maximum (`torch.ao.quantization.MinMaxObserver`).
class MinMaxObserverImpl : public torch::nn::Cloneable<MinMaxObserverImpl>, public MinMaxStatsObserver {
 public:
  explicit MinMaxObserverImpl(MinMaxObserverOptions options = {});
  void reset() override { register_stats(); }
  at::Tensor forward(const at::Tensor& x) override;
  MinMaxObserverOptions options;
};
TORCH_MODULE(MinMaxObserver);

/// Options of MovingAverageMinMaxObserver.
struct MovingAverageMinMaxObserverOptions {
  /// Weight of the new batch's min/max in the running average.
  TORCH_ARG(double, averaging_constant) = 0.01;
  QFX_UNIFORM_OBSERVER_ARGS(c10::kQUInt8, c10::kPerTensorAffine);
};

/// Records moving averages of the minimum and maximum.
class MovingAverageMinMaxObserverImpl : public torch::nn::Cloneable<MovingAverageMinMaxObserverImpl>,
                                        public MinMaxStatsObserver {
 public:
  explicit MovingAverageMinMaxObserverImpl(MovingAverageMinMaxObserverOptions options = {});
  void reset() override { register_stats(); }
  at::Tensor forward(const at::Tensor& x) override;
  MovingAverageMinMaxObserverOptions options;
};
TORCH_MODULE(MovingAverageMinMaxObserver);

/// Options of PerChannelMinMaxObserver.
struct PerChannelMinMaxObserverOptions {
  /// The channel axis.
  TORCH_ARG(int64_t, ch_axis) = 0;
  QFX_UNIFORM_OBSERVER_ARGS(c10::kQUInt8, c10::kPerChannelAffine);
};

/// Records the running minimum and maximum of each channel.
class PerChannelMinMaxObserverImpl : public torch::nn::Cloneable<PerChannelMinMaxObserverImpl>,
                                     public MinMaxStatsObserver {
 public:
  explicit PerChannelMinMaxObserverImpl(PerChannelMinMaxObserverOptions options = {});
  void reset() override { register_stats(); }
  at::Tensor forward(const at::Tensor& x) override;
  int64_t ch_axis() const override { return options.ch_axis(); }
  PerChannelMinMaxObserverOptions options;
};
TORCH_MODULE(PerChannelMinMaxObserver);

/// Options of MovingAveragePerChannelMinMaxObserver.
struct MovingAveragePerChannelMinMaxObserverOptions {
  TORCH_ARG(double, averaging_constant) = 0.01;
  TORCH_ARG(int64_t, ch_axis) = 0;
  QFX_UNIFORM_OBSERVER_ARGS(c10::kQUInt8, c10::kPerChannelAffine);
};

/// Records moving averages of each channel's minimum and maximum.
class MovingAveragePerChannelMinMaxObserverImpl
    : public torch::nn::Cloneable<MovingAveragePerChannelMinMaxObserverImpl>,
      public MinMaxStatsObserver {
 public:
  explicit MovingAveragePerChannelMinMaxObserverImpl(MovingAveragePerChannelMinMaxObserverOptions options = {});
  void reset() override { register_stats(); }
  at::Tensor forward(const at::Tensor& x) override;
  int64_t ch_axis() const override { return options.ch_axis(); }
  MovingAveragePerChannelMinMaxObserverOptions options;
};
TORCH_MODULE(MovingAveragePerChannelMinMaxObserver);

}  // namespace qfx::quant
