// UniformObserverBase::calculate_qparams_from (one loop over the elements)
// against PyTorch 1.13's `_calculate_qparams` written with the ATen ops it
// runs, in the same order: the same bits, dtypes and shapes, per tensor and
// per channel (8+ channels reach ATen's vectorized kernels), on ranges with
// zeros of both signs, denormals, values beyond float's sum and ties of
// round half to even.

#include "qfx/quant/min_max_observers.h"
#include "qfx/quant/qtypes.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace qfx::quant {
namespace {

QParams qparams_with_aten(const UniformObserverBase& observer, bool custom_range, at::Tensor min_val,
                          at::Tensor max_val) {
  auto [quant_min, quant_max] = observer.quant_range();
  at::Tensor eps = at::tensor({observer.eps()}, at::kFloat);
  at::Tensor min_val_neg = at::min(min_val, at::zeros_like(min_val));
  at::Tensor max_val_pos = at::max(max_val, at::zeros_like(max_val));
  at::Tensor scale = at::ones(min_val_neg.sizes(), at::kFloat);
  at::Tensor zero_point = at::zeros(min_val_neg.sizes(), at::kLong);
  if (is_symmetric(observer.qscheme())) {
    max_val_pos = at::max(-min_val_neg, max_val_pos);
    scale = at::max(max_val_pos / (static_cast<double>(quant_max - quant_min) / 2), eps);
    if (observer.dtype() == c10::kQUInt8) {
      int64_t sum = quant_min + quant_max;
      int64_t mid = sum >= 0 ? sum / 2 : -((-sum + 1) / 2);
      zero_point = zero_point.new_full(zero_point.sizes(), custom_range ? mid : 128);
    }
  } else if (is_float_qparams(observer.qscheme())) {
    scale = (max_val - min_val) / static_cast<double>(quant_max - quant_min);
    scale = at::where(scale > eps, scale, at::ones_like(scale));
    zero_point = -1 * min_val / scale;
  } else {
    scale = at::max((max_val_pos - min_val_neg) / static_cast<double>(quant_max - quant_min), eps);
    zero_point = at::rsub(at::round(min_val_neg / scale).to(at::kInt), quant_min);
    zero_point = at::clamp(zero_point, quant_min, quant_max);
  }
  if (scale.dim() == 0) scale = scale.reshape({1});
  if (zero_point.dim() == 0) zero_point = zero_point.reshape({1});
  return {scale, zero_point};
}

// (min, max) pairs with min <= max: special values, then random ranges.
std::pair<std::vector<float>, std::vector<float>> ranges() {
  const float denormal = std::numeric_limits<float>::denorm_min(), big = 3e38f;
  std::vector<float> lo = {0.0f, -0.0f, -0.0f, 0.0f, -1.0f, 0.5f, -denormal, 0.0f, -big, -big, -2.0f, -1e-30f};
  std::vector<float> hi = {0.0f, 0.0f, -0.0f, -0.0f, -0.5f, 0.75f, denormal, 1e-30f, big, -1.0f, 2.0f, 0.0f};
  at::Tensor a = at::randn({500}) * at::pow(10.0, at::randint(-6, 4, {500})), b = at::rand({500}) * 8;
  for (int64_t i = 0; i < 500; ++i) {
    lo.push_back(a[i].item<float>());
    hi.push_back(a[i].item<float>() + b[i].item<float>() * (i % 3 == 0 ? 1e-6f : 1.0f));
  }
  // ties: min_neg / scale exactly k + 0.5 for affine quint8 (scale 1/255 * 255 levels)
  for (int k = 0; k < 8; ++k) lo.push_back(-(k + 0.5f)), hi.push_back(255.0f - (k + 0.5f));
  return {lo, hi};
}

void expect_same(const QParams& ours, const QParams& theirs, const std::string& what) {
  ASSERT_EQ(ours.scale.scalar_type(), theirs.scale.scalar_type()) << what;
  ASSERT_EQ(ours.zero_point.scalar_type(), theirs.zero_point.scalar_type()) << what;
  ASSERT_EQ(ours.scale.sizes(), theirs.scale.sizes()) << what;
  ASSERT_EQ(ours.zero_point.sizes(), theirs.zero_point.sizes()) << what;
  // bitwise, so that -0.0 and 0.0 differ
  EXPECT_TRUE(at::equal(ours.scale.view(at::kInt), theirs.scale.view(at::kInt))) << what;
  at::Tensor zo = ours.zero_point, zt = theirs.zero_point;
  if (zo.scalar_type() == at::kFloat) zo = zo.view(at::kInt), zt = zt.view(at::kInt);
  EXPECT_TRUE(at::equal(zo, zt)) << what << "\n" << ours.zero_point << "\n" << theirs.zero_point;
}

struct Case {
  c10::ScalarType dtype;
  c10::QScheme qscheme;
  bool reduce_range;
  c10::optional<int64_t> quant_min, quant_max;
};

template <typename Options>
Options options_of(const Case& c) {
  return Options()
      .dtype(c.dtype)
      .qscheme(c.qscheme)
      .reduce_range(c.reduce_range)
      .quant_min(c.quant_min)
      .quant_max(c.quant_max);
}

std::shared_ptr<UniformObserverBase> make_observer(const Case& c) {
  if (c.qscheme == c10::kPerTensorAffine || c.qscheme == c10::kPerTensorSymmetric) {
    return MinMaxObserver(options_of<MinMaxObserverOptions>(c)).ptr();
  }
  return PerChannelMinMaxObserver(options_of<PerChannelMinMaxObserverOptions>(c)).ptr();
}

TEST(QParams, LikeTheATenOps) {
  at::manual_seed(4);
  auto [lo, hi] = ranges();
  const std::vector<Case> cases = {
      {c10::kQUInt8, c10::kPerTensorAffine, false, {}, {}},
      {c10::kQUInt8, c10::kPerTensorAffine, true, {}, {}},
      {c10::kQInt8, c10::kPerTensorAffine, false, {}, {}},
      {c10::kQInt32, c10::kPerTensorAffine, false, {}, {}},
      {c10::kQUInt4x2, c10::kPerTensorAffine, false, {}, {}},
      {c10::kQUInt8, c10::kPerTensorAffine, false, 0, 127},
      {c10::kQInt8, c10::kPerTensorSymmetric, false, {}, {}},
      {c10::kQInt8, c10::kPerTensorSymmetric, false, -127, 127},
      {c10::kQUInt8, c10::kPerTensorSymmetric, false, {}, {}},
      {c10::kQUInt8, c10::kPerTensorSymmetric, false, 0, 127},
      {c10::kQInt32, c10::kPerTensorSymmetric, false, {}, {}},
      {c10::kQUInt8, c10::kPerChannelAffine, false, {}, {}},
      {c10::kQInt8, c10::kPerChannelSymmetric, false, {}, {}},
      {c10::kQUInt8, c10::kPerChannelSymmetric, false, {}, {}},
      {c10::kQUInt8, c10::kPerChannelAffineFloatQParams, false, {}, {}},
      {c10::kQUInt4x2, c10::kPerChannelAffineFloatQParams, false, {}, {}},
  };
  for (const Case& c : cases) {
    const std::string what = std::string(c10::toString(c.dtype)) + " " + qscheme_name(c.qscheme);
    std::shared_ptr<UniformObserverBase> observer = make_observer(c);
    for (size_t i = 0; i < lo.size(); ++i) {  // per tensor: 0-dim
      at::Tensor min_val = at::scalar_tensor(lo[i]), max_val = at::scalar_tensor(hi[i]);
      expect_same(observer->calculate_qparams_from(min_val, max_val),
                  qparams_with_aten(*observer, c.quant_min.has_value(), min_val, max_val),
                  what + " [" + std::to_string(lo[i]) + ", " + std::to_string(hi[i]) + "]");
    }
    for (int64_t channels : {1, 3, 8, 17, 64}) {  // per channel: 1-dim
      for (size_t start = 0; start + channels <= lo.size(); start += channels) {
        at::Tensor min_val = at::tensor(std::vector<float>(lo.begin() + start, lo.begin() + start + channels));
        at::Tensor max_val = at::tensor(std::vector<float>(hi.begin() + start, hi.begin() + start + channels));
        expect_same(observer->calculate_qparams_from(min_val, max_val),
                    qparams_with_aten(*observer, c.quant_min.has_value(), min_val, max_val),
                    what + " channels " + std::to_string(channels) + " from " + std::to_string(start));
      }
    }
  }
}

TEST(QParams, NothingObservedAndInvalidRanges) {
  MinMaxObserver observer;
  const QParams none = observer->calculate_qparams_from(at::scalar_tensor(INFINITY), at::scalar_tensor(-INFINITY));
  EXPECT_EQ(none.scale.item<double>(), 1.0);
  EXPECT_EQ(none.zero_point.item<int64_t>(), 0);
  EXPECT_THROW(observer->calculate_qparams_from(at::scalar_tensor(1.0), at::scalar_tensor(0.0)), c10::Error);
  EXPECT_THROW(observer->calculate_qparams_from(at::tensor({0.0f, 2.0f}), at::tensor({1.0f, 1.0f})), c10::Error);
  EXPECT_THROW(observer->calculate_qparams_from(at::scalar_tensor(NAN), at::scalar_tensor(1.0)), c10::Error);
  EXPECT_THROW(observer->calculate_qparams_from(at::scalar_tensor(0.0, at::kDouble), at::scalar_tensor(1.0)),
               c10::Error);
}

}  // namespace
}  // namespace qfx::quant
