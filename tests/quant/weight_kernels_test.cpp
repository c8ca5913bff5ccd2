// The weight kernels against the ATen ops they replace: the same values on
// random weights of many shapes, with ties, NaN, infinities and huge values.

#include "qfx/quant/weight_kernels.h"

#include "support/simd_paths.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

namespace qfx::quant {
namespace {

/// Runs `body` with the file's AVX2 paths on (where the CPU has them) and off.
template <typename Body>
void with_and_without_avx2(Body body) {
  test::with_and_without_avx2(weight_kernels_use_avx2(), body);
}

/// Weights with the awkward cases mixed in: exact .5 ties of the scale,
/// values beyond every clamp, zeros of both signs, and (if asked) NaN / inf
/// and values beyond 2^31 (those two go one at a time, the rest 16 or 32 at
/// a time).
at::Tensor awkward_weights(at::IntArrayRef shape, double scale, bool non_finite) {
  at::Tensor w = at::randn(shape) * 0.2;
  at::Tensor flat = w.view({-1});
  const int64_t n = flat.numel();
  for (int64_t i = 0; i < n; i += 7) flat[i] = (std::floor(i / 7.0) - 40 + 0.5) * scale;  // ties
  const double beyond = non_finite ? 3e9 : 200.0;  // beyond 2^31, or only beyond the clamps
  for (int64_t i = 3; i < n; i += 97) flat[i] = (i % 2 ? 1 : -1) * beyond * scale;
  for (int64_t i = 5; i < n; i += 89) flat[i] = (i % 2) ? 0.0 : -0.0;
  if (non_finite) {
    flat[1] = NAN;
    flat[n / 2] = INFINITY;
    flat[n - 2] = -INFINITY;
  }
  return w;
}

void quantize_per_channel_like_aten() {
  at::manual_seed(3);
  const std::vector<std::vector<int64_t>> shapes = {{16, 3, 3, 3}, {7, 5}, {4, 8, 1, 1},
                                                    {3, 6, 5, 5},  {33},   {6, 40, 3, 3}};
  for (const auto& shape : shapes) {
    for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size()) && axis < 2; ++axis) {
      for (bool non_finite : {false, true}) {
        const int64_t channels = shape[axis];
        at::Tensor scales = at::rand({channels}, at::kDouble) * 0.01 + 1e-4;
        at::Tensor w = awkward_weights(shape, scales[0].item<double>(), non_finite);
        at::Tensor zeros = at::zeros({channels}, at::kLong);
        at::Tensor zps = at::randint(0, 256, {channels}, at::kLong);
        // qparams as observers give them (float32 / int64) and as ATen keeps them (float64)
        for (auto [dtype, zp, scale_dtype] :
             {std::tuple{at::kQInt8, zeros, at::kDouble}, std::tuple{at::kQUInt8, zps, at::kDouble},
              std::tuple{at::kQInt8, zeros.to(at::kInt), at::kFloat}, std::tuple{at::kQUInt8, zps, at::kFloat}}) {
          at::Tensor s = scales.to(scale_dtype);
          at::Tensor ours = quantize_channels(w, s, zp, axis, dtype);
          at::Tensor theirs = at::quantize_per_channel(w, s, zp, axis, dtype);
          ASSERT_TRUE(at::equal(ours.int_repr(), theirs.int_repr()))
              << "shape " << at::IntArrayRef(shape) << " axis " << axis << " dtype " << dtype;
          ASSERT_TRUE(at::equal(ours.q_per_channel_scales(), theirs.q_per_channel_scales()));
          ASSERT_TRUE(at::equal(ours.q_per_channel_zero_points(), theirs.q_per_channel_zero_points()));
          ASSERT_EQ(ours.q_per_channel_axis(), axis);
        }
      }
    }
  }
}

TEST(WeightKernels, QuantizePerChannelLikeATen) { with_and_without_avx2(quantize_per_channel_like_aten); }

TEST(WeightKernels, FloatZeroPointsKeepFloatQParams) {
  at::Tensor w = at::randn({10, 8});
  at::Tensor scales = at::rand({10}) * 0.1 + 0.01, zps = at::randn({10});
  at::Tensor ours = quantize_channels(w, scales, zps, 0, at::kQUInt8);
  at::Tensor theirs = at::quantize_per_channel(w, scales, zps, 0, at::kQUInt8);
  EXPECT_EQ(ours.qscheme(), c10::kPerChannelAffineFloatQParams);
  EXPECT_TRUE(at::equal(ours.int_repr(), theirs.int_repr()));
}

TEST(WeightKernels, QuantizePerChannelKeepsATenErrors) {
  at::Tensor w = at::randn({4, 3});
  EXPECT_THROW(quantize_channels(w, at::ones({4}), at::full({4}, 300, at::kLong), 0, at::kQUInt8), c10::Error);
  EXPECT_THROW(quantize_channels(w, at::ones({3}), at::zeros({3}, at::kLong), 0, at::kQInt8), c10::Error);
}

void quantize_per_tensor_like_aten() {
  at::manual_seed(5);
  const std::vector<std::vector<int64_t>> shapes = {{16, 3, 3, 3}, {7, 5}, {64, 256, 1, 1}, {33}, {1000, 70}};
  for (const auto& shape : shapes) {
    for (bool non_finite : {false, true}) {
      const double scale = 0.0037;
      at::Tensor w = awkward_weights(shape, scale, non_finite);
      // qparams as observers give them (float32 / int64 or int32) and as ATen keeps them (float64)
      for (auto [dtype, zp] : {std::pair{at::kQInt8, at::scalar_tensor(0, at::kLong)},
                               std::pair{at::kQInt8, at::scalar_tensor(-7, at::kInt)},
                               std::pair{at::kQUInt8, at::scalar_tensor(131, at::kLong)}}) {
        for (c10::ScalarType scale_dtype : {at::kFloat, at::kDouble}) {
          at::Tensor s = at::scalar_tensor(scale, scale_dtype);
          at::Tensor ours = quantize_tensor(w, s, zp, dtype);
          at::Tensor theirs = at::quantize_per_tensor(w, s, zp, dtype);
          ASSERT_TRUE(at::equal(ours.int_repr(), theirs.int_repr())) << "shape " << at::IntArrayRef(shape);
          ASSERT_EQ(ours.q_scale(), theirs.q_scale());
          ASSERT_EQ(ours.q_zero_point(), theirs.q_zero_point());
          ASSERT_EQ(ours.strides(), theirs.strides());
          ASSERT_EQ(ours.scalar_type(), theirs.scalar_type());
        }
      }
    }
  }
}

TEST(WeightKernels, QuantizePerTensorLikeATen) { with_and_without_avx2(quantize_per_tensor_like_aten); }

TEST(WeightKernels, QuantizePerTensorLeavesOtherCasesToATen) {
  at::Tensor w = at::randn({6, 4});
  at::Tensor s = at::scalar_tensor(0.02), zp = at::scalar_tensor(3, at::kLong);
  at::Tensor transposed = w.t();  // not contiguous
  EXPECT_TRUE(at::equal(quantize_tensor(transposed, s, zp, at::kQUInt8).int_repr(),
                        at::quantize_per_tensor(transposed, s, zp, at::kQUInt8).int_repr()));
  EXPECT_TRUE(at::equal(quantize_tensor(w, s, zp, at::kQInt32).int_repr(),
                        at::quantize_per_tensor(w, s, zp, at::kQInt32).int_repr()));
  EXPECT_THROW(quantize_tensor(w, s, at::scalar_tensor(300, at::kLong), at::kQUInt8), c10::Error);
  EXPECT_THROW(quantize_tensor(w, s, at::scalar_tensor(-129, at::kLong), at::kQInt8), c10::Error);
}

void row_min_max_like_aten() {
  at::manual_seed(4);
  for (int64_t width : {1, 3, 4, 9, 37, 64, 1000}) {
    at::Tensor rows = at::randn({37, width}) * 10;
    rows[5][width - 1] = NAN;
    rows[9][0] = INFINITY;
    rows[11][width / 2] = -INFINITY;
    auto [lo, hi] = row_aminmax(rows);
    auto [alo, ahi] = at::aminmax(rows, 1);
    ASSERT_TRUE(at::allclose(lo, alo, 0, 0, /*equal_nan=*/true)) << "width " << width;
    ASSERT_TRUE(at::allclose(hi, ahi, 0, 0, /*equal_nan=*/true)) << "width " << width;
    ASSERT_TRUE(std::isnan(lo[5].item<float>()) && std::isnan(hi[5].item<float>()));
  }
}

TEST(WeightKernels, RowMinMaxLikeATen) { with_and_without_avx2(row_min_max_like_aten); }

}  // namespace
}  // namespace qfx::quant
