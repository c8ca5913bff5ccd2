// Batch-norm folding in loops; see fold_loops.h. The library is built with
// -ffp-contract=off (CMakeLists.txt), so `a * b + c` stays two roundings as
// ATen's separate kernels make it.

#include "fold_loops.h"

#include <ATen/ATen.h>

#include <cmath>
#include <vector>

namespace qfx::nn::detail {
namespace {

/// A defined tensor whose values loops can read in place: contiguous
/// float32 on the CPU, no lazy conjugate or negation.
bool plain_floats(const at::Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous() && !t.is_conj() &&
         !t.is_neg();
}

/// A per-channel vector of `size` plain floats; an undefined one passes when
/// `optional` (it stands for a constant).
bool readable(const at::Tensor& t, int64_t size, bool optional) {
  if (!t.defined()) return optional;
  return plain_floats(t) && t.dim() == 1 && t.numel() == size;
}

/// Value i of `t`, or `fallback` for an undefined tensor.
float at_or(const at::Tensor& t, int64_t i, float fallback) { return t.defined() ? t.data_ptr<float>()[i] : fallback; }

}  // namespace

std::optional<std::pair<at::Tensor, at::Tensor>> fold_conv_bn_loops(const at::Tensor& conv_w, const at::Tensor& conv_b,
                                                                    const at::Tensor& bn_rm, const at::Tensor& bn_rv,
                                                                    double bn_eps, const at::Tensor& bn_w,
                                                                    const at::Tensor& bn_b, int64_t axis) {
  if (!plain_floats(conv_w) || conv_w.dim() < 2 || conv_w.numel() == 0) return std::nullopt;
  const int64_t channels = conv_w.size(axis);
  if (!readable(bn_rm, channels, false) || !readable(bn_rv, channels, false) || !readable(conv_b, channels, true) ||
      !readable(bn_w, channels, true) || !readable(bn_b, channels, true)) {
    return std::nullopt;
  }
  const float eps = static_cast<float>(bn_eps);  // a Python scalar meets a float32 tensor
  const float* mean = bn_rm.data_ptr<float>();
  const float* var = bn_rv.data_ptr<float>();
  std::vector<float> scale(channels);
  at::Tensor bias = at::empty({channels}, bn_rm.options());
  float* b = bias.data_ptr<float>();
  for (int64_t c = 0; c < channels; ++c) {
    const float var_rsqrt = 1.0f / std::sqrt(var[c] + eps);
    const float gamma = at_or(bn_w, c, 1.0f);
    scale[c] = gamma * var_rsqrt;
    const float shifted = (at_or(conv_b, c, 0.0f) - mean[c]) * var_rsqrt;
    const float scaled = shifted * gamma;
    b[c] = scaled + at_or(bn_b, c, 0.0f);
  }
  at::Tensor weight = at::empty(conv_w.sizes(), conv_w.options());
  const float* in = conv_w.data_ptr<float>();
  float* out = weight.data_ptr<float>();
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= conv_w.size(d);
  const int64_t inner = conv_w.numel() / (outer * channels);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t base = (o * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i) out[base + i] = in[base + i] * scale[c];
    }
  }
  return std::make_pair(weight, bias);
}

}  // namespace qfx::nn::detail
