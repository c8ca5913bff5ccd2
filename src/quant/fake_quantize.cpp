// Fake-quantize modules: PyTorch 1.13's forward() of each, on ATen's
// fake-quantize ops (which carry the straight-through gradients).

#include "qfx/quant/fake_quantize.h"

#include "qfx/quant/min_max_observers.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/autograd.h>

#include <cmath>

namespace qfx::quant {
namespace {

// The child observer, registered as `activation_post_process`.
std::shared_ptr<ActivationPostProcess> make_observer(torch::nn::Module& parent, const ObserverSpec& spec) {
  std::shared_ptr<ActivationPostProcess> observer = spec.make();
  parent.register_module("activation_post_process", std::static_pointer_cast<torch::nn::Module>(observer));
  return observer;
}

// FakeQuantize's check of an explicit range against the observer's dtype.
void check_range_fits(const ObserverSpec& observer, int64_t quant_min, int64_t quant_max) {
  TORCH_CHECK(quant_min <= quant_max, "FakeQuantize: quant_min must be less than or equal to quant_max");
  const SpecValue* dtype_arg = observer.arg("dtype");
  c10::ScalarType dtype = dtype_arg != nullptr && dtype_arg->is_dtype() ? dtype_arg->to_dtype() : c10::kQUInt8;
  auto [lo, hi] = calculate_qmin_qmax(c10::nullopt, c10::nullopt, dtype, false);
  TORCH_CHECK(lo <= quant_min, "FakeQuantize: quant_min out of bound for the observer's dtype");
  TORCH_CHECK(quant_max <= hi, "FakeQuantize: quant_max out of bound for the observer's dtype");
}

}  // namespace

at::Tensor fake_quantize(const at::Tensor& x, const ActivationPostProcess& observer, const at::Tensor& scale,
                         const at::Tensor& zero_point) {
  auto [quant_min, quant_max] = observer.quant_range();
  if (is_per_channel(observer.qscheme())) {
    return at::fake_quantize_per_channel_affine(x, scale, zero_point, observer.ch_axis(), quant_min, quant_max);
  }
  return at::fake_quantize_per_tensor_affine(x, scale, zero_point, quant_min, quant_max);
}

void FakeQuantizeBase::register_flags(c10::ScalarType dtype) {
  fake_quant_enabled_ = register_buffer("fake_quant_enabled", at::ones({1}, dtype));
  observer_enabled_ = register_buffer("observer_enabled", at::ones({1}, dtype));
}

void FakeQuantizeBase::enable_fake_quant(bool enabled) { fake_quant_enabled_.fill_(enabled ? 1 : 0); }
void FakeQuantizeBase::enable_observer(bool enabled) { observer_enabled_.fill_(enabled ? 1 : 0); }
bool FakeQuantizeBase::fake_quant_enabled() const { return fake_quant_enabled_.item<int64_t>() == 1; }
bool FakeQuantizeBase::observer_enabled() const { return observer_enabled_.item<int64_t>() == 1; }

FakeQuantizeImpl::FakeQuantizeImpl(FakeQuantizeOptions options) : options(std::move(options)) { reset(); }

void FakeQuantizeImpl::register_state(c10::ScalarType flag_dtype) {
  ObserverSpec spec = options.observer();
  if (options.quant_min() && options.quant_max()) {
    check_range_fits(spec, *options.quant_min(), *options.quant_max());
    spec = spec.with_args({{"quant_min", *options.quant_min()}, {"quant_max", *options.quant_max()}});
  }
  register_flags(flag_dtype);
  activation_post_process = make_observer(*this, spec);
  TORCH_CHECK(is_per_channel(observer().qscheme()) || is_per_tensor(observer().qscheme()),
              "FakeQuantize: only per-channel and per-tensor quantization are supported, got ",
              qscheme_name(observer().qscheme()));
  scale = register_buffer("scale", at::ones({1}, at::kFloat));
  auto zero_point_dtype = is_float_qparams(observer().qscheme()) ? at::kFloat : at::kInt;
  zero_point = register_buffer("zero_point", at::zeros({1}, zero_point_dtype));
}

void FakeQuantizeImpl::reset() { register_state(at::kByte); }

at::Tensor FakeQuantizeImpl::forward(const at::Tensor& x) {
  if (observer_enabled()) {
    observer().forward(x.detach());
    QParams q = calculate_qparams();
    if (scale.sizes() != q.scale.sizes()) {
      scale.resize_(q.scale.sizes());
      zero_point.resize_(q.zero_point.sizes());
    }
    scale.copy_(q.scale);
    zero_point.copy_(q.zero_point);
  }
  if (!fake_quant_enabled()) return x;
  return fake_quantize(x, observer(), scale, zero_point);
}

FixedQParamsFakeQuantizeImpl::FixedQParamsFakeQuantizeImpl(ObserverSpec observer) : observer_spec(std::move(observer)) {
  reset();
}

void FixedQParamsFakeQuantizeImpl::reset() {
  register_flags(at::kByte);
  activation_post_process = make_observer(*this, observer_spec);
  TORCH_CHECK(activation_post_process->has_fixed_qparams() && observer_spec.short_type() == "FixedQParamsObserver",
              "FixedQParamsFakeQuantize's observer must be a FixedQParamsObserver, not ", observer_spec.short_type());
  TORCH_CHECK(is_per_tensor(qscheme()), "FixedQParamsFakeQuantize supports per-tensor quantization only");
  // PyTorch shares the observer's scale and zero_point tensors.
  QParams fixed = activation_post_process->calculate_qparams();
  scale = register_buffer("scale", fixed.scale);
  zero_point = register_buffer("zero_point", fixed.zero_point);
}

at::Tensor FixedQParamsFakeQuantizeImpl::forward(const at::Tensor& x) {
  if (!fake_quant_enabled()) return x;
  return fake_quantize(x, *activation_post_process, scale, zero_point);
}

FusedMovingAvgObsFakeQuantizeImpl::FusedMovingAvgObsFakeQuantizeImpl(FusedMovingAvgObsFakeQuantizeOptions options)
    : options(std::move(options)) {
  reset();
}

void FusedMovingAvgObsFakeQuantizeImpl::reset() {
  check_range_fits(options.observer(), options.quant_min(), options.quant_max());
  ObserverSpec spec =
      options.observer().with_args({{"quant_min", options.quant_min()}, {"quant_max", options.quant_max()}});
  register_flags(at::kLong);
  activation_post_process = make_observer(*this, spec);
  std::string type = spec.short_type();
  TORCH_CHECK(type == "MovingAverageMinMaxObserver" || type == "MovingAveragePerChannelMinMaxObserver",
              "FusedMovingAvgObsFakeQuantize works only with MovingAverageMinMaxObserver or "
              "MovingAveragePerChannelMinMaxObserver, not ",
              type);
  scale = register_buffer("scale", at::ones({1}, at::kFloat));
  zero_point = register_buffer("zero_point", at::zeros({1}, at::kInt));
}

at::Tensor FusedMovingAvgObsFakeQuantizeImpl::forward(const at::Tensor& x) {
  auto& stats = dynamic_cast<MinMaxStatsObserver&>(*activation_post_process);
  auto [quant_min, quant_max] = quant_range();
  return at::fused_moving_avg_obs_fake_quant(x, observer_enabled_, fake_quant_enabled_, stats.min_val, stats.max_val,
                                             scale, zero_point, averaging_constant(), quant_min, quant_max, ch_axis(),
                                             is_per_channel(qscheme()), is_symmetric(qscheme()));
}

double FusedMovingAvgObsFakeQuantizeImpl::averaging_constant() const {
  if (auto* per_tensor = dynamic_cast<MovingAverageMinMaxObserverImpl*>(activation_post_process.get())) {
    return per_tensor->options.averaging_constant();
  }
  return dynamic_cast<MovingAveragePerChannelMinMaxObserverImpl&>(*activation_post_process)
      .options.averaging_constant();
}

LearnableFakeQuantizeImpl::LearnableFakeQuantizeImpl(LearnableFakeQuantizeOptions options)
    : options(std::move(options)) {
  reset();
}

void LearnableFakeQuantizeImpl::reset() {
  TORCH_CHECK(options.quant_min() < options.quant_max(),
              "LearnableFakeQuantize: quant_min must be less than quant_max");
  int64_t channels = options.channel_len();
  TORCH_CHECK(channels == -1 || channels > 0, "LearnableFakeQuantize: channel_len must be positive, or -1");
  int64_t n = channels == -1 ? 1 : channels;
  scale = register_parameter("scale", at::full({n}, options.scale(), at::kFloat));
  zero_point = register_parameter("zero_point", at::full({n}, options.zero_point(), at::kFloat));
  ObserverSpec spec =
      options.observer().with_args({{"quant_min", options.quant_min()}, {"quant_max", options.quant_max()}});
  activation_post_process = make_observer(*this, spec);
  auto [lo, hi] = calculate_qmin_qmax(c10::nullopt, c10::nullopt, activation_post_process->dtype(), false);
  TORCH_CHECK(lo <= options.quant_min() && options.quant_max() <= hi,
              "LearnableFakeQuantize: quant range out of bound");
  // PyTorch's buffers: fake_quant_enabled, static_enabled (the observer flag), learning_enabled, eps.
  fake_quant_enabled_ = register_buffer("fake_quant_enabled", at::ones({1}, at::kByte));
  observer_enabled_ = register_buffer("static_enabled", at::ones({1}, at::kByte));
  learning_enabled = register_buffer("learning_enabled", at::zeros({1}, at::kByte));
  eps_buffer = register_buffer("eps", at::tensor({kFloat32Eps}, at::kFloat));
}

void LearnableFakeQuantizeImpl::enable_observer(bool enabled) { observer_enabled_.fill_(enabled ? 1 : 0); }

void LearnableFakeQuantizeImpl::toggle_qparam_learning(bool enabled) {
  learning_enabled.fill_(enabled ? 1 : 0);
  scale.set_requires_grad(enabled);
  zero_point.set_requires_grad(enabled);
}

void LearnableFakeQuantizeImpl::enable_param_learning() {
  toggle_qparam_learning(true);
  enable_fake_quant(true);
  enable_observer(false);
}

void LearnableFakeQuantizeImpl::enable_static_estimate() {
  toggle_qparam_learning(false);
  enable_fake_quant(true);
  enable_observer(true);
}

void LearnableFakeQuantizeImpl::enable_static_observation() {
  toggle_qparam_learning(false);
  enable_fake_quant(false);
  enable_observer(true);
}

QParams LearnableFakeQuantizeImpl::calculate_qparams() {
  torch::NoGradGuard no_grad;
  scale.clamp_(eps_buffer.item<double>());
  at::Tensor z = zero_point.detach().round().clamp(options.quant_min(), options.quant_max()).to(at::kLong);
  return {scale.detach(), z};
}

at::Tensor LearnableFakeQuantizeImpl::forward(const at::Tensor& x) {
  if (observer_enabled()) {
    activation_post_process->forward(x.detach());
    QParams q = activation_post_process->calculate_qparams();
    torch::NoGradGuard no_grad;
    scale.copy_(q.scale);
    zero_point.copy_(q.zero_point);
  } else {
    torch::NoGradGuard no_grad;
    scale.clamp_(eps_buffer.item<double>());
  }
  if (!fake_quant_enabled()) return x;
  if (is_symmetric(qscheme())) {
    torch::NoGradGuard no_grad;
    zero_point.zero_();
  }
  // Python: 1.0 / (X.numel() * quant_max) ** 0.5
  double grad_factor =
      options.use_grad_scaling() ? 1.0 / std::pow(static_cast<double>(x.numel() * options.quant_max()), 0.5) : 1.0;
  if (is_per_channel(qscheme())) {
    return at::_fake_quantize_learnable_per_channel_affine(x, scale, zero_point, ch_axis(), options.quant_min(),
                                                           options.quant_max(), grad_factor);
  }
  return at::_fake_quantize_learnable_per_tensor_affine(x, scale, zero_point, options.quant_min(), options.quant_max(),
                                                        grad_factor);
}

}  // namespace qfx::quant
