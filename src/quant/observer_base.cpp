// UniformObserverBase: PyTorch 1.13's UniformQuantizationObserverBase with
// `_calculate_qparams` as one loop doing, per element, the float32 arithmetic
// of its ATen ops in the same order, so that scales and zero points are the
// same bits, dtypes and shapes.

#include "qfx/quant/observer_base.h"

#include "qfx/ir/module_registry.h"
#include "qfx/ir/python_literals.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <vector>

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
    auto [lowest, highest] = calculate_qmin_qmax(c10::nullopt, c10::nullopt, dtype, false);
    TORCH_CHECK(*options.quant_min() >= lowest && *options.quant_max() <= highest, class_name,
                ": the quantization range [", *options.quant_min(), ", ", *options.quant_max(), "] does not fit ",
                ir::dtype_name(dtype), " ([", lowest, ", ", highest, "])");
  }
  TORCH_CHECK(!(is_symmetric(qscheme) && options.reduce_range() && dtype == c10::kQUInt8), class_name,
              ": cannot reduce the range of symmetric quantization to quint8");
  quant_range_ = calculate_qmin_qmax(options.quant_min(), options.quant_max(), dtype, options.reduce_range());
}

void UniformObserverBase::register_eps() { eps_ = register_buffer("eps", at::tensor({uniform_.eps()}, at::kFloat)); }

namespace {

// PyTorch's check_min_max_valid: false when nothing was observed.
bool observed(const float* min_val, const float* max_val, int64_t n, bool per_tensor) {
  if (n == 0) return false;
  if (per_tensor) {
    if (min_val[0] == INFINITY && max_val[0] == -INFINITY) return false;
    TORCH_CHECK(min_val[0] <= max_val[0], "min ", min_val[0], " should be less than max ", max_val[0]);
    return true;
  }
  for (int64_t c = 0; c < n; ++c) {
    TORCH_CHECK(min_val[c] <= max_val[c], "min should be less than max in every channel");
  }
  return true;
}

// at::minimum / at::maximum of two floats (NaN propagates).
float minimum(float a, float b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }
float maximum(float a, float b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }

// `torch.round(v).to(torch.int)`: half to even, then x86's conversion
// (INT32_MIN for NaN and out-of-range values).
int32_t round_to_int(float v) {
  const float r = std::nearbyint(v);
  return r >= -2147483648.0f && r < 2147483648.0f ? static_cast<int32_t>(r) : INT32_MIN;
}

// `quant_min - zero_point` in int32, wrapping as ATen's int32 rsub does.
int32_t rsub_int32(int64_t quant_min, int32_t zero_point) {
  return static_cast<int32_t>(static_cast<uint32_t>(quant_min - static_cast<int64_t>(zero_point)));
}

// The numbers _calculate_qparams divides by and clamps to, as float32.
struct QParamsArithmetic {
  int64_t quant_min, quant_max;
  float eps;
  float levels() const { return static_cast<float>(static_cast<double>(quant_max - quant_min)); }
  float half_levels() const { return static_cast<float>(static_cast<double>(quant_max - quant_min) / 2); }
};

void symmetric_qparams(const float* lo, const float* hi, int64_t n, const QParamsArithmetic& q,
                       int64_t zero_point_value, float* scale, int64_t* zero_point) {
  const float half_levels = q.half_levels();
  for (int64_t c = 0; c < n; ++c) {
    const float max_pos = maximum(-minimum(lo[c], 0.0f), maximum(hi[c], 0.0f));
    scale[c] = maximum(max_pos / half_levels, q.eps);
    zero_point[c] = zero_point_value;
  }
}

void float_qparams(const float* lo, const float* hi, int64_t n, const QParamsArithmetic& q, float* scale,
                   float* zero_point) {
  const float levels = q.levels();
  for (int64_t c = 0; c < n; ++c) {
    const float range = (hi[c] - lo[c]) / levels;
    scale[c] = range > q.eps ? range : 1.0f;
    zero_point[c] = -1.0f * lo[c] / scale[c];
  }
}

void affine_qparams(const float* lo, const float* hi, int64_t n, const QParamsArithmetic& q, float* scale,
                    int32_t* zero_point) {
  const float levels = q.levels();
  const auto quant_min = static_cast<int32_t>(q.quant_min), quant_max = static_cast<int32_t>(q.quant_max);
  for (int64_t c = 0; c < n; ++c) {
    const float min_neg = minimum(lo[c], 0.0f);
    scale[c] = maximum((maximum(hi[c], 0.0f) - min_neg) / levels, q.eps);
    zero_point[c] = std::clamp(rsub_int32(q.quant_min, round_to_int(min_neg / scale[c])), quant_min, quant_max);
  }
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

int64_t UniformObserverBase::symmetric_zero_point() const {
  if (uniform_.dtype() != c10::kQUInt8) return 0;
  if (!uniform_.quant_min().has_value()) return 128;
  const int64_t sum = quant_range_.first + quant_range_.second;  // Python's (quant_min + quant_max) // 2
  return sum >= 0 ? sum / 2 : -((-sum + 1) / 2);
}

// _calculate_qparams element by element: every op PyTorch runs on the
// min/max tensors is elementwise float32 arithmetic (the divisors are Python
// numbers cast to float32), so one loop gives the same bits, dtypes and
// shapes (scalars become 1-element tensors, as in PyTorch).
QParams UniformObserverBase::calculate_qparams_from(const at::Tensor& min_val, const at::Tensor& max_val) {
  TORCH_CHECK(min_val.scalar_type() == at::kFloat && max_val.scalar_type() == at::kFloat &&
                  min_val.sizes() == max_val.sizes() && min_val.dim() <= 1,
              describe(), ": min_val and max_val must be float32 tensors of one shape, 0-dim or 1-dim");
  TORCH_CHECK(eps_.defined() && eps_.numel() == 1, describe(), ": no eps buffer");
  const at::Tensor lo_tensor = min_val.contiguous(), hi_tensor = max_val.contiguous();
  const float* lo = lo_tensor.data_ptr<float>();
  const float* hi = hi_tensor.data_ptr<float>();
  const int64_t n = min_val.numel();
  if (!observed(lo, hi, n, min_val.dim() == 0)) return no_data_qparams(*this);
  const QParamsArithmetic q{quant_range_.first, quant_range_.second, eps_.to(at::kFloat).item<float>()};
  const std::vector<int64_t> shape = min_val.dim() == 0 ? std::vector<int64_t>{1} : min_val.sizes().vec();
  at::Tensor scale = at::empty(shape, at::kFloat);
  if (is_symmetric(uniform_.qscheme())) {
    at::Tensor zero_point = at::empty(shape, at::kLong);
    symmetric_qparams(lo, hi, n, q, symmetric_zero_point(), scale.data_ptr<float>(), zero_point.data_ptr<int64_t>());
    return {scale, zero_point};
  }
  if (is_float_qparams(uniform_.qscheme())) {
    at::Tensor zero_point = at::empty(shape, at::kFloat);
    float_qparams(lo, hi, n, q, scale.data_ptr<float>(), zero_point.data_ptr<float>());
    return {scale, zero_point};
  }
  at::Tensor zero_point = at::empty(shape, at::kInt);
  affine_qparams(lo, hi, n, q, scale.data_ptr<float>(), zero_point.data_ptr<int32_t>());
  return {scale, zero_point};
}

}  // namespace qfx::quant
