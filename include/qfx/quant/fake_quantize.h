#pragma once
/// \file
/// Fake-quantize modules for QAT (torch.ao.quantization.fake_quantize):
/// FakeQuantize, FixedQParamsFakeQuantize, FusedMovingAvgObsFakeQuantize
/// (ATen's fused observe + fake-quantize op, whose qparams follow ATen's
/// ChooseQuantizationParams, not the Python formula) and
/// LearnableFakeQuantize (LSQ; PyTorch's `_LearnableFakeQuantize`). Gradients
/// flow through ATen's fake-quantize autograd (straight-through).

#include "qfx/quant/observer_spec.h"

#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>

namespace qfx::quant {

/// `x` fake-quantized with `scale` and `zero_point` on the quantization range,
/// scheme and channel axis of `observer` (the qparams it gave).
at::Tensor fake_quantize(const at::Tensor& x, const ActivationPostProcess& observer, const at::Tensor& scale,
                         const at::Tensor& zero_point);

/// Flags shared by the fake-quantize modules.
class FakeQuantizeBase : public ActivationPostProcess {
 public:
  void enable_fake_quant(bool enabled = true);
  void disable_fake_quant() { enable_fake_quant(false); }
  /// For LearnableFakeQuantize this toggles the static (observer) estimate.
  virtual void enable_observer(bool enabled = true);
  void disable_observer() { enable_observer(false); }
  bool fake_quant_enabled() const;
  bool observer_enabled() const;

 protected:
  /// Registers the two flag buffers (uint8, or int64 for the fused module).
  void register_flags(c10::ScalarType dtype);
  at::Tensor fake_quant_enabled_;
  at::Tensor observer_enabled_;
};

/// Options of FakeQuantize: the observer (with its arguments) and an
/// explicit quantization range handed to it.
struct FakeQuantizeOptions {
  explicit FakeQuantizeOptions(ObserverSpec observer = ObserverSpec("MovingAverageMinMaxObserver"))
      : observer_(std::move(observer)) {}
  TORCH_ARG(ObserverSpec, observer);
  TORCH_ARG(c10::optional<int64_t>, quant_min) = c10::nullopt;
  TORCH_ARG(c10::optional<int64_t>, quant_max) = c10::nullopt;
};

/// Observes, then fake-quantizes with the observer's qparams.
class FakeQuantizeImpl : public torch::nn::Cloneable<FakeQuantizeImpl>, public FakeQuantizeBase {
 public:
  explicit FakeQuantizeImpl(FakeQuantizeOptions options = FakeQuantizeOptions());
  void reset() override;
  at::Tensor forward(const at::Tensor& x) override;
  QParams calculate_qparams() override { return observer().calculate_qparams(); }
  c10::ScalarType dtype() const override { return observer().dtype(); }
  c10::QScheme qscheme() const override { return observer().qscheme(); }
  std::pair<int64_t, int64_t> quant_range() const override { return observer().quant_range(); }
  int64_t ch_axis() const override { return observer().ch_axis(); }
  double eps() const override { return observer().eps(); }
  bool has_fixed_qparams() const override { return observer().has_fixed_qparams(); }
  /// The observer (`activation_post_process`).
  ActivationPostProcess& observer() const { return *activation_post_process; }

  FakeQuantizeOptions options;
  std::shared_ptr<ActivationPostProcess> activation_post_process;
  at::Tensor scale;
  at::Tensor zero_point;

 protected:
  void register_state(c10::ScalarType flag_dtype);
};
TORCH_MODULE(FakeQuantize);

/// FakeQuantize with a FixedQParamsObserver: fixed scale and zero point.
class FixedQParamsFakeQuantizeImpl : public torch::nn::Cloneable<FixedQParamsFakeQuantizeImpl>,
                                     public FakeQuantizeBase {
 public:
  explicit FixedQParamsFakeQuantizeImpl(ObserverSpec observer);
  void reset() override;
  at::Tensor forward(const at::Tensor& x) override;
  QParams calculate_qparams() override { return {scale, zero_point}; }
  c10::ScalarType dtype() const override { return activation_post_process->dtype(); }
  c10::QScheme qscheme() const override { return activation_post_process->qscheme(); }
  std::pair<int64_t, int64_t> quant_range() const override { return activation_post_process->quant_range(); }
  bool has_fixed_qparams() const override { return true; }

  ObserverSpec observer_spec;
  std::shared_ptr<ActivationPostProcess> activation_post_process;
  at::Tensor scale;
  at::Tensor zero_point;
};
TORCH_MODULE(FixedQParamsFakeQuantize);

/// Options of FusedMovingAvgObsFakeQuantize (PyTorch's defaults: range 0..255).
struct FusedMovingAvgObsFakeQuantizeOptions {
  explicit FusedMovingAvgObsFakeQuantizeOptions(ObserverSpec observer = ObserverSpec("MovingAverageMinMaxObserver"))
      : observer_(std::move(observer)) {}
  TORCH_ARG(ObserverSpec, observer);
  TORCH_ARG(int64_t, quant_min) = 0;
  TORCH_ARG(int64_t, quant_max) = 255;
};

/// Moving-average observation and fake quantization in one ATen op.
class FusedMovingAvgObsFakeQuantizeImpl : public torch::nn::Cloneable<FusedMovingAvgObsFakeQuantizeImpl>,
                                          public FakeQuantizeBase {
 public:
  explicit FusedMovingAvgObsFakeQuantizeImpl(
      FusedMovingAvgObsFakeQuantizeOptions options = FusedMovingAvgObsFakeQuantizeOptions());
  void reset() override;
  at::Tensor forward(const at::Tensor& x) override;
  QParams calculate_qparams() override { return activation_post_process->calculate_qparams(); }
  c10::ScalarType dtype() const override { return activation_post_process->dtype(); }
  c10::QScheme qscheme() const override { return activation_post_process->qscheme(); }
  std::pair<int64_t, int64_t> quant_range() const override { return activation_post_process->quant_range(); }
  int64_t ch_axis() const override { return activation_post_process->ch_axis(); }
  double eps() const override { return activation_post_process->eps(); }
  /// The observer's averaging constant.
  double averaging_constant() const;

  FusedMovingAvgObsFakeQuantizeOptions options;
  std::shared_ptr<ActivationPostProcess> activation_post_process;
  at::Tensor scale;
  at::Tensor zero_point;
};
TORCH_MODULE(FusedMovingAvgObsFakeQuantize);

/// Options of LearnableFakeQuantize.
struct LearnableFakeQuantizeOptions {
  explicit LearnableFakeQuantizeOptions(ObserverSpec observer) : observer_(std::move(observer)) {}
  TORCH_ARG(ObserverSpec, observer);
  TORCH_ARG(int64_t, quant_min) = 0;
  TORCH_ARG(int64_t, quant_max) = 255;
  TORCH_ARG(double, scale) = 1.0;
  TORCH_ARG(double, zero_point) = 0.0;
  /// -1 for per tensor, else the number of channels.
  TORCH_ARG(int64_t, channel_len) = -1;
  TORCH_ARG(bool, use_grad_scaling) = false;
};

/// Fake quantization with learnable scale and zero point (LSQ).
class LearnableFakeQuantizeImpl : public torch::nn::Cloneable<LearnableFakeQuantizeImpl>, public FakeQuantizeBase {
 public:
  explicit LearnableFakeQuantizeImpl(LearnableFakeQuantizeOptions options);
  void reset() override;
  at::Tensor forward(const at::Tensor& x) override;
  QParams calculate_qparams() override;
  void enable_observer(bool enabled = true) override;
  /// Learn scale and zero point by gradient descent; no observer updates.
  void enable_param_learning();
  /// The observer's estimate sets scale and zero point.
  void enable_static_estimate();
  /// Observe only; return the input unchanged.
  void enable_static_observation();
  void toggle_qparam_learning(bool enabled);
  c10::ScalarType dtype() const override { return activation_post_process->dtype(); }
  c10::QScheme qscheme() const override { return activation_post_process->qscheme(); }
  std::pair<int64_t, int64_t> quant_range() const override { return {options.quant_min(), options.quant_max()}; }
  int64_t ch_axis() const override { return activation_post_process->ch_axis(); }

  LearnableFakeQuantizeOptions options;
  std::shared_ptr<ActivationPostProcess> activation_post_process;
  at::Tensor scale;
  at::Tensor zero_point;
  at::Tensor learning_enabled;
  at::Tensor eps_buffer;
};
TORCH_MODULE(LearnableFakeQuantize);

}  // namespace qfx::quant
