// The min/max observers: PyTorch 1.13's forward() of each, op for op, with
// one difference — values that are not finite are left out (and warned about
// once) instead of turning the statistics into NaN.

#include "qfx/quant/min_max_observers.h"

#include "qfx/quant/weight_kernels.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

namespace qfx::quant {
namespace {

// For row_aminmax's results: contiguous float32.
bool all_finite(const at::Tensor& t) {
  const float* v = t.data_ptr<float>();
  return std::all_of(v, v + t.numel(), [](float x) { return std::isfinite(x); });
}

const char* check_qscheme(c10::QScheme qscheme, bool per_channel, const char* class_name) {
  if (per_channel) {
    TORCH_CHECK(is_per_channel(qscheme), class_name,
                "'s qscheme must be torch.per_channel_symmetric, torch.per_channel_affine or "
                "torch.per_channel_affine_float_qparams, not ",
                qscheme_name(qscheme));
  } else {
    TORCH_CHECK(is_per_tensor(qscheme), class_name,
                "'s qscheme must be torch.per_tensor_symmetric or torch.per_tensor_affine, not ",
                qscheme_name(qscheme));
  }
  return class_name;
}

}  // namespace

MinMaxStatsObserver::MinMaxStatsObserver(const UniformObserverOptions& options, const char* class_name,
                                         bool per_channel)
    : UniformObserverBase(options, check_qscheme(options.qscheme(), per_channel, class_name)),
      per_channel_(per_channel) {}

void MinMaxStatsObserver::register_stats() {
  register_eps();
  if (per_channel_) {
    min_val = register_buffer("min_val", at::empty({0}, at::kFloat));
    max_val = register_buffer("max_val", at::empty({0}, at::kFloat));
  } else {
    min_val = register_buffer("min_val", at::scalar_tensor(INFINITY, at::kFloat));
    max_val = register_buffer("max_val", at::scalar_tensor(-INFINITY, at::kFloat));
  }
}

void MinMaxStatsObserver::reset_min_max_vals() {
  if (per_channel_) {
    min_val.resize_({0});
    max_val.resize_({0});
  } else {
    min_val.fill_(INFINITY);
    max_val.fill_(-INFINITY);
  }
}

void MinMaxStatsObserver::store(const at::Tensor& lo, const at::Tensor& hi) {
  min_val.resize_(lo.sizes());
  max_val.resize_(hi.sizes());
  min_val.copy_(lo);
  max_val.copy_(hi);
}

bool MinMaxStatsObserver::is_uninitialized() const {
  if (per_channel_) return min_val.numel() == 0 || max_val.numel() == 0;
  return min_val.item<float>() == INFINITY && max_val.item<float>() == -INFINITY;
}

c10::optional<std::pair<at::Tensor, at::Tensor>> MinMaxStatsObserver::finite_aminmax(const at::Tensor& x) {
  auto [lo, hi] = at::aminmax(x);
  if (std::isfinite(lo.item<float>()) && std::isfinite(hi.item<float>())) return std::make_pair(lo, hi);
  warn_non_finite(*this, warned_non_finite_);
  at::Tensor finite = x.masked_select(at::isfinite(x));
  if (finite.numel() == 0) return c10::nullopt;
  auto [flo, fhi] = at::aminmax(finite);
  return std::make_pair(flo, fhi);
}

std::pair<at::Tensor, at::Tensor> MinMaxStatsObserver::finite_row_aminmax(const at::Tensor& rows) {
  auto [lo, hi] = row_aminmax(rows);
  if (all_finite(lo) && all_finite(hi)) return {lo, hi};
  warn_non_finite(*this, warned_non_finite_);
  at::Tensor finite = at::isfinite(rows);
  return {at::amin(at::where(finite, rows, INFINITY), 1), at::amax(at::where(finite, rows, -INFINITY), 1)};
}

void MinMaxStatsObserver::observe(const at::Tensor& x, c10::optional<double> averaging_constant, int64_t ch_axis) {
  if (x.numel() == 0) return;
  at::Tensor lo, hi;
  if (per_channel_) {
    std::tie(lo, hi) = finite_row_aminmax(channel_rows(x.detach(), ch_axis));
  } else {
    auto range = finite_aminmax(x.detach().to(min_val.scalar_type()));
    if (!range) return;
    std::tie(lo, hi) = *range;
  }
  if (!is_uninitialized()) {  // the first batch is taken as it is, as in PyTorch
    if (averaging_constant) {
      lo = min_val + *averaging_constant * (lo - min_val);
      hi = max_val + *averaging_constant * (hi - max_val);
    } else {
      lo = at::min(lo, min_val);
      hi = at::max(hi, max_val);
    }
  }
  store(lo, hi);
}

at::Tensor MinMaxStatsObserver::channel_rows(const at::Tensor& x, int64_t ch_axis) {
  std::vector<int64_t> order(x.dim());
  std::iota(order.begin(), order.end(), 0);
  int64_t axis = ch_axis < 0 ? ch_axis + x.dim() : ch_axis;
  TORCH_CHECK(axis >= 0 && axis < x.dim(), "ch_axis ", ch_axis, " is out of range for a ", x.dim(), "-d tensor");
  std::swap(order[0], order[axis]);
  return at::flatten(x.permute(order).to(at::kFloat), 1);
}

MinMaxObserverImpl::MinMaxObserverImpl(MinMaxObserverOptions options)
    : MinMaxStatsObserver(UniformObserverOptions::of(options), "MinMaxObserver", false), options(options) {
  reset();
}

at::Tensor MinMaxObserverImpl::forward(const at::Tensor& x_orig) {
  observe(x_orig, c10::nullopt);
  return x_orig;
}

MovingAverageMinMaxObserverImpl::MovingAverageMinMaxObserverImpl(MovingAverageMinMaxObserverOptions options)
    : MinMaxStatsObserver(UniformObserverOptions::of(options), "MovingAverageMinMaxObserver", false), options(options) {
  reset();
}

at::Tensor MovingAverageMinMaxObserverImpl::forward(const at::Tensor& x_orig) {
  observe(x_orig, options.averaging_constant());
  return x_orig;
}

PerChannelMinMaxObserverImpl::PerChannelMinMaxObserverImpl(PerChannelMinMaxObserverOptions options)
    : MinMaxStatsObserver(UniformObserverOptions::of(options), "PerChannelMinMaxObserver", true), options(options) {
  reset();
}

at::Tensor PerChannelMinMaxObserverImpl::forward(const at::Tensor& x_orig) {
  observe(x_orig, c10::nullopt, options.ch_axis());
  return x_orig;
}

MovingAveragePerChannelMinMaxObserverImpl::MovingAveragePerChannelMinMaxObserverImpl(
    MovingAveragePerChannelMinMaxObserverOptions options)
    : MinMaxStatsObserver(UniformObserverOptions::of(options), "MovingAveragePerChannelMinMaxObserver", true),
      options(options) {
  reset();
}

at::Tensor MovingAveragePerChannelMinMaxObserverImpl::forward(const at::Tensor& x_orig) {
  observe(x_orig, options.averaging_constant(), options.ch_axis());
  return x_orig;
}

}  // namespace qfx::quant
