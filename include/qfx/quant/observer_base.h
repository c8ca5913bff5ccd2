#pragma once
/// \file
/// The interface of observers and fake-quantize modules (PyTorch's
/// "activation post process"), and the base of the observers that compute
/// uniform affine or symmetric qparams (`UniformQuantizationObserverBase`).
///
/// Observers are LibTorch modules: their statistics are buffers, so
/// `torch::save`, `.to()` and `clone()` carry them.

#include "qfx/quant/qtypes.h"

#include <ATen/core/Tensor.h>
#include <torch/arg.h>
#include <torch/nn/module.h>

#include <string>
#include <utility>

namespace qfx::quant {

/// Quantization parameters: scale (float32) and zero point, one element per
/// tensor or per channel, with the dtypes PyTorch's observers return.
struct QParams {
  at::Tensor scale;
  at::Tensor zero_point;
};

/// What the quantization passes ask of an observer or fake-quantize module.
class ActivationPostProcess : public virtual torch::nn::Module {
 public:
  /// Observes `x` (and, for fake-quantize modules, returns it fake-quantized).
  virtual at::Tensor forward(const at::Tensor& x) = 0;
  /// The qparams from what was observed.
  virtual QParams calculate_qparams() = 0;
  /// The dtype the observed tensor is quantized to (`torch.quint8`, or
  /// `torch.float16`/`torch.float32` for placeholders).
  virtual c10::ScalarType dtype() const = 0;
  virtual c10::QScheme qscheme() const { return c10::kPerTensorAffine; }
  /// (quant_min, quant_max) in use.
  virtual std::pair<int64_t, int64_t> quant_range() const;
  /// The channel axis of per-channel quantization, else -1.
  virtual int64_t ch_axis() const { return -1; }
  /// The smallest scale the observer produces.
  virtual double eps() const { return kFloat32Eps; }
  /// For dynamic quantization: the dtype activations are quantized to at run
  /// time (PyTorch 1.13's `compute_dtype`); nullopt for static observers.
  virtual c10::optional<c10::ScalarType> compute_dtype() const { return c10::nullopt; }
  /// True for observers whose qparams are fixed (FixedQParamsObserver, ...).
  virtual bool has_fixed_qparams() const { return false; }

  /// A label for messages, e.g. the module path `activation_post_process_3`.
  const std::string& label() const { return label_; }
  void set_label(std::string label) { label_ = std::move(label); }
  /// "MinMaxObserver 'activation_post_process_3'" (or just the class).
  std::string describe() const;

 private:
  std::string label_;
};

/// Observers proper (not fake-quantize modules), as PyTorch's `ObserverBase`.
class ObserverBase : public ActivationPostProcess {};

/// The arguments of PyTorch's UniformQuantizationObserverBase, shared by the
/// min/max and histogram observers' options.
#define QFX_UNIFORM_OBSERVER_ARGS(default_dtype, default_qscheme)                      \
  /** The quantized dtype: torch.quint8, torch.qint8, torch.quint4x2, torch.qint32. */ \
  TORCH_ARG(c10::ScalarType, dtype) = default_dtype;                                   \
  /** The quantization scheme. */                                                      \
  TORCH_ARG(c10::QScheme, qscheme) = default_qscheme;                                  \
  /** Halve the range, as PyTorch's (deprecated) reduce_range. */                      \
  TORCH_ARG(bool, reduce_range) = false;                                               \
  /** An explicit quantization range (both or neither). */                             \
  TORCH_ARG(c10::optional<int64_t>, quant_min) = c10::nullopt;                         \
  TORCH_ARG(c10::optional<int64_t>, quant_max) = c10::nullopt;                         \
  /** The smallest scale. */                                                           \
  TORCH_ARG(double, eps) = kFloat32Eps

/// The common part of those options.
struct UniformObserverOptions {
  QFX_UNIFORM_OBSERVER_ARGS(c10::kQUInt8, c10::kPerTensorAffine);

 public:
  /// The common part of any observer options that use the macro.
  template <typename Options>
  static UniformObserverOptions of(const Options& o) {
    return UniformObserverOptions()
        .dtype(o.dtype())
        .qscheme(o.qscheme())
        .reduce_range(o.reduce_range())
        .quant_min(o.quant_min())
        .quant_max(o.quant_max())
        .eps(o.eps());
  }
};

/// Observers that turn a min/max range into affine or symmetric qparams with
/// PyTorch's Python formula (`_calculate_qparams`), bit for bit.
class UniformObserverBase : public ObserverBase {
 public:
  c10::ScalarType dtype() const override { return uniform_.dtype(); }
  c10::QScheme qscheme() const override { return uniform_.qscheme(); }
  std::pair<int64_t, int64_t> quant_range() const override { return quant_range_; }
  double eps() const override { return uniform_.eps(); }
  bool reduce_range() const { return uniform_.reduce_range(); }

  /// The qparams for a range (per tensor: 0-dim, per channel: 1-dim).
  QParams calculate_qparams_from(const at::Tensor& min_val, const at::Tensor& max_val);

 protected:
  /// Checks the options against PyTorch's rules; raises c10::Error naming
  /// the observer class for an invalid combination.
  UniformObserverBase(const UniformObserverOptions& options, const char* class_name);
  /// Registers the `eps` buffer (call from `reset()`).
  void register_eps();
  /// The zero point of symmetric qparams: 128 for quint8 (the middle of a
  /// custom range), else 0.
  int64_t symmetric_zero_point() const;

  UniformObserverOptions uniform_;
  std::pair<int64_t, int64_t> quant_range_;
  at::Tensor eps_;
};

/// The default qparams PyTorch returns when nothing was observed (scale 1.0,
/// zero point 0), with a warning naming the observer.
QParams no_data_qparams(const ActivationPostProcess& observer);

/// Warns once per observer that non-finite values were left out of its
/// statistics; `warned` holds the once-state.
void warn_non_finite(const ActivationPostProcess& observer, bool& warned);

}  // namespace qfx::quant
