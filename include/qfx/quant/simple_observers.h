#pragma once
/// \file
/// The observers that compute no statistics: PlaceholderObserver (carries a
/// dtype, e.g. float16, or a dynamic `compute_dtype`), FixedQParamsObserver
/// (fixed scale and zero point, for sigmoid, tanh, ...), NoopObserver,
/// ReuseInputObserver (reshape-like ops reuse their input's observer) and
/// RecordingObserver (keeps what it saw, for debugging).

#include "qfx/quant/observer_base.h"

#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>

#include <vector>

namespace qfx::quant {

/// Options of PlaceholderObserver.
struct PlaceholderObserverOptions {
  TORCH_ARG(c10::ScalarType, dtype) = c10::kFloat;
  TORCH_ARG(std::string, custom_op_name) = "";
  /// Set for dynamic quantization: the dtype activations are quantized to at
  /// run time.
  TORCH_ARG(c10::optional<c10::ScalarType>, compute_dtype) = c10::nullopt;
};

/// Passes its configuration on; observes nothing.
class PlaceholderObserverImpl : public torch::nn::Cloneable<PlaceholderObserverImpl>, public ObserverBase {
 public:
  explicit PlaceholderObserverImpl(PlaceholderObserverOptions options = {}) : options(std::move(options)) {}
  void reset() override {}
  at::Tensor forward(const at::Tensor& x) override { return x; }
  QParams calculate_qparams() override;
  c10::ScalarType dtype() const override { return options.dtype(); }
  c10::optional<c10::ScalarType> compute_dtype() const override { return options.compute_dtype(); }
  PlaceholderObserverOptions options;
};
TORCH_MODULE(PlaceholderObserver);

/// Options of FixedQParamsObserver.
struct FixedQParamsObserverOptions {
  FixedQParamsObserverOptions(double scale, int64_t zero_point) : scale_(scale), zero_point_(zero_point) {}
  TORCH_ARG(double, scale);
  TORCH_ARG(int64_t, zero_point);
  TORCH_ARG(c10::ScalarType, dtype) = c10::kQUInt8;
  TORCH_ARG(c10::QScheme, qscheme) = c10::kPerTensorAffine;
  TORCH_ARG(int64_t, quant_min) = 0;
  TORCH_ARG(int64_t, quant_max) = 255;
};

/// Fixed qparams, whatever it observes.
class FixedQParamsObserverImpl : public torch::nn::Cloneable<FixedQParamsObserverImpl>, public ObserverBase {
 public:
  explicit FixedQParamsObserverImpl(FixedQParamsObserverOptions options);
  void reset() override;
  at::Tensor forward(const at::Tensor& x) override { return x; }
  QParams calculate_qparams() override { return {scale, zero_point}; }
  c10::ScalarType dtype() const override { return options.dtype(); }
  c10::QScheme qscheme() const override { return options.qscheme(); }
  std::pair<int64_t, int64_t> quant_range() const override { return {options.quant_min(), options.quant_max()}; }
  bool has_fixed_qparams() const override { return true; }
  FixedQParamsObserverOptions options;
  at::Tensor scale;
  at::Tensor zero_point;
};
TORCH_MODULE(FixedQParamsObserver);

/// Options of NoopObserver.
struct NoopObserverOptions {
  TORCH_ARG(c10::ScalarType, dtype) = c10::kHalf;
  TORCH_ARG(std::string, custom_op_name) = "";
};

/// Observes nothing (float16 and other non-quantized settings).
class NoopObserverImpl : public torch::nn::Cloneable<NoopObserverImpl>, public ObserverBase {
 public:
  explicit NoopObserverImpl(NoopObserverOptions options = {}) : options(std::move(options)) {}
  void reset() override {}
  at::Tensor forward(const at::Tensor& x) override { return x; }
  QParams calculate_qparams() override;
  c10::ScalarType dtype() const override { return options.dtype(); }
  NoopObserverOptions options;
};
TORCH_MODULE(NoopObserver);

/// Marks an op (reshape, ...) that reuses the observer of its input.
class ReuseInputObserverImpl : public torch::nn::Cloneable<ReuseInputObserverImpl>, public ObserverBase {
 public:
  ReuseInputObserverImpl() = default;
  void reset() override {}
  at::Tensor forward(const at::Tensor& x) override { return x; }
  QParams calculate_qparams() override;
  c10::ScalarType dtype() const override { return c10::kQUInt8; }
};
TORCH_MODULE(ReuseInputObserver);

/// Options of RecordingObserver.
struct RecordingObserverOptions {
  TORCH_ARG(c10::ScalarType, dtype) = c10::kQUInt8;
};

/// Keeps a copy of every tensor it sees (for debugging).
class RecordingObserverImpl : public torch::nn::Cloneable<RecordingObserverImpl>, public ObserverBase {
 public:
  explicit RecordingObserverImpl(RecordingObserverOptions options = {}) : options(options) {}
  void reset() override {}
  at::Tensor forward(const at::Tensor& x) override;
  QParams calculate_qparams() override;
  c10::ScalarType dtype() const override { return options.dtype(); }
  /// The tensors seen so far.
  const std::vector<at::Tensor>& get_tensor_value() const { return tensor_val_; }
  RecordingObserverOptions options;

 private:
  std::vector<at::Tensor> tensor_val_;
};
TORCH_MODULE(RecordingObserver);

}  // namespace qfx::quant
