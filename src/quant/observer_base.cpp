// UniformObserverBase: PyTorch 1.13's UniformQuantizationObserverBase with
// `_calculate_qparams` written with the same ATen ops in the same order, so
// that scales and zero points are the same float32 bits and dtypes.

#include "qfx/quant/observer_base.h"

#include "qfx/ir/module_registry.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

namespace qfx::quant {

std::pair<int64_t, int64_t> ActivationPostProcess::quant_range() const {
  return calculate_qmin_qmax(c10::nullopt, c10::nullopt, dtype(), false);
}

std::string ActivationPostProcess::describe() const {
  std::string type = ir::module_type_name(*this);
  type = type.substr(type.rfind('.') + 1);
  return label_.empty() ? type : type + " '" + label_ + "'";
}

UniformObserverBase::UniformObserverBase(const UniformObserverOptions& options, const char* class_name)
    : uniform_(options) {
  c10::ScalarType dtype = options.dtype();
  c10::QScheme qscheme = options.qscheme();
  TORCH_CHECK(dtype == c10::kQInt8 || dtype == c10::kQUInt8 || dtype == c10::kQUInt4x2 || dtype == c10::kQInt32,
              class_name, ": dtype must be torch.qint8, torch.quint8, torch.quint4x2 or torch.qint32");
  TORCH_CHECK(options.quant_min().has_value() == options.quant_max().has_value(), class_name,
              ": give both quant_min and quant_max, or neither");
  if (options.quant_min()) {
    TORCH_CHECK(*options.quant_min() <= 0 && 0 <= *options.quant_max(), class_name,
                ": the quantization range [quant_min, quant_max] must include 0");
    TORCH_CHECK(*options.quant_min() < *options.quant_max(), class_name, ": quant_min must be less than quant_max");
  }
  TORCH_CHECK(!(is_symmetric(qscheme) && options.reduce_range() && dtype == c10::kQUInt8), class_name,
              ": cannot reduce the range of symmetric quantization to quint8");
  quant_range_ = calculate_qmin_qmax(options.quant_min(), options.quant_max(), dtype, options.reduce_range());
}

void UniformObserverBase::register_eps() {
  eps_ = register_buffer("eps", at::tensor({uniform_.eps()}, at::kFloat));
}

namespace {

// PyTorch's check_min_max_valid: false when nothing was observed.
bool observed(const at::Tensor& min_val, const at::Tensor& max_val) {
  if (min_val.numel() == 0 || max_val.numel() == 0) return false;
  if (min_val.dim() == 0 || max_val.dim() == 0) {
    if (min_val.item<double>() == INFINITY && max_val.item<double>() == -INFINITY) return false;
    TORCH_CHECK(min_val.item<double>() <= max_val.item<double>(), "min ", min_val.item<double>(),
                " should be less than max ", max_val.item<double>());
    return true;
  }
  TORCH_CHECK(at::all(min_val <= max_val).item<bool>(), "min should be less than max in every channel");
  return true;
}

}  // namespace

QParams no_data_qparams(const ActivationPostProcess& observer) {
  TORCH_WARN(observer.describe(), ": no data was observed; using PyTorch's default scale 1.0 and zero_point 0");
  return {at::tensor({1.0}, at::kFloat), at::tensor({int64_t{0}}, at::kLong)};
}

void warn_non_finite(const ActivationPostProcess& observer, bool& warned) {
  if (warned) return;
  warned = true;
  TORCH_WARN(observer.describe(), ": left non-finite values (NaN, +-Inf) out of its statistics");
}

QParams UniformObserverBase::calculate_qparams_from(const at::Tensor& min_val, const at::Tensor& max_val) {
  if (!observed(min_val, max_val)) return no_data_qparams(*this);
  auto [quant_min, quant_max] = quant_range_;
  at::Tensor min_val_neg = at::min(min_val, at::zeros_like(min_val));
  at::Tensor max_val_pos = at::max(max_val, at::zeros_like(max_val));
  at::Tensor scale = at::ones(min_val_neg.sizes(), at::kFloat);
  at::Tensor zero_point = at::zeros(min_val_neg.sizes(), at::kLong);
  c10::QScheme qscheme = uniform_.qscheme();
  if (is_symmetric(qscheme)) {
    max_val_pos = at::max(-min_val_neg, max_val_pos);
    scale = max_val_pos / (static_cast<double>(quant_max - quant_min) / 2);
    scale = at::max(scale, eps_);
    if (uniform_.dtype() == c10::kQUInt8) {
      bool customized = uniform_.quant_min().has_value();
      int64_t mid = quant_min + quant_max >= 0 ? (quant_min + quant_max) / 2 : -((-(quant_min + quant_max) + 1) / 2);
      zero_point = zero_point.new_full(zero_point.sizes(), customized ? mid : 128);
    }
  } else if (is_float_qparams(qscheme)) {
    scale = (max_val - min_val) / static_cast<double>(quant_max - quant_min);
    scale = at::where(scale > eps_, scale, at::ones_like(scale));
    zero_point = -1 * min_val / scale;
  } else {
    scale = (max_val_pos - min_val_neg) / static_cast<double>(quant_max - quant_min);
    scale = at::max(scale, eps_);
    zero_point = at::rsub(at::round(min_val_neg / scale).to(at::kInt), quant_min);
    zero_point = at::clamp(zero_point, quant_min, quant_max);
  }
  // Scalars become 1-element tensors, as in PyTorch.
  if (scale.dim() == 0) scale = at::tensor({scale.item<double>()}, scale.options());
  if (zero_point.dim() == 0) zero_point = zero_point.reshape({1});
  return {scale, zero_point};
}

}  // namespace qfx::quant
