// Observers without statistics. Asking them for qparams is an error, as in
// PyTorch.

#include "qfx/quant/simple_observers.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cmath>

namespace qfx::quant {
namespace {

[[noreturn]] void no_qparams(const ActivationPostProcess& observer) {
  TORCH_CHECK(false, "calculate_qparams should not be called for ", observer.describe());
}

}  // namespace

QParams PlaceholderObserverImpl::calculate_qparams() { no_qparams(*this); }
QParams NoopObserverImpl::calculate_qparams() { no_qparams(*this); }
QParams ReuseInputObserverImpl::calculate_qparams() { no_qparams(*this); }
QParams RecordingObserverImpl::calculate_qparams() { no_qparams(*this); }

FixedQParamsObserverImpl::FixedQParamsObserverImpl(FixedQParamsObserverOptions options) : options(options) { reset(); }

void FixedQParamsObserverImpl::reset() {
  TORCH_CHECK(std::isfinite(options.scale()) && options.scale() > 0,
              "FixedQParamsObserver: scale must be positive and finite, got ", options.scale());
  TORCH_CHECK(options.quant_min() <= options.zero_point() && options.zero_point() <= options.quant_max(),
              "FixedQParamsObserver: zero_point ", options.zero_point(), " is outside the quantization range [",
              options.quant_min(), ", ", options.quant_max(), "]");
  scale = register_buffer("scale", at::tensor({options.scale()}, at::kFloat));
  zero_point = register_buffer("zero_point", at::tensor({options.zero_point()}, at::kInt));
}

at::Tensor RecordingObserverImpl::forward(const at::Tensor& x) {
  tensor_val_.push_back(x.clone());
  return x;
}

}  // namespace qfx::quant
