// Batch-norm folding's loops against the ATen ops PyTorch's
// fuse_conv_bn_weights runs, bit for bit: conv and transposed-conv shapes,
// missing bias / affine parameters, and statistics with zeros of both signs,
// tiny and huge variances, negative variance and NaN.

#include "../../src/nn/fold_loops.h"
#include "qfx/nn/fusion.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

namespace qfx::nn::detail {
namespace {

/// torch.nn.utils.fusion.fuse_conv_bn_weights, op for op.
std::pair<at::Tensor, at::Tensor> pytorch_fold(const at::Tensor& w, at::Tensor b, const at::Tensor& rm,
                                               const at::Tensor& rv, double eps, at::Tensor gamma, at::Tensor beta,
                                               int64_t axis) {
  if (!b.defined()) b = at::zeros_like(rm);
  if (!gamma.defined()) gamma = at::ones_like(rm);
  if (!beta.defined()) beta = at::zeros_like(rm);
  at::Tensor var_rsqrt = at::rsqrt(rv + eps);
  std::vector<int64_t> shape(w.dim(), 1);
  shape[axis] = -1;
  return {w * (gamma * var_rsqrt).reshape(shape), (b - rm) * var_rsqrt * gamma + beta};
}

/// Same bits (NaN payloads and the sign of zero included), same shape.
void expect_same_bits(const at::Tensor& actual, const at::Tensor& expected, const char* what) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  EXPECT_TRUE(actual.contiguous().view(at::kInt).equal(expected.contiguous().view(at::kInt))) << what;
}

/// Statistics of `n` channels with the awkward values mixed in.
at::Tensor awkward(int64_t n, double low, double high) {
  at::Tensor t = at::rand({n}) * (high - low) + low;
  const float specials[] = {0.0f, -0.0f, 1e-30f, 3e38f, -1.0f, NAN};
  for (int64_t i = 0; i < n; i += 3) t[i] = specials[(i / 3) % 6];
  return t;
}

TEST(FoldLoops, FoldConvBnLikeATen) {
  at::manual_seed(11);
  const std::vector<std::pair<std::vector<int64_t>, int64_t>> cases = {
      {{16, 3, 3, 3}, 0}, {{8, 1, 3, 3}, 0},  {{5, 4, 7}, 0}, {{6, 2, 3, 3, 3}, 0},
      {{40, 1, 1, 1}, 0}, {{3, 12, 3, 3}, 1}, {{4, 6, 5}, 1}, {{7, 9, 1, 1}, 1}};
  for (const auto& [shape, axis] : cases) {
    const int64_t channels = shape[axis];
    for (int defined = 0; defined < 8; ++defined) {
      SCOPED_TRACE(testing::Message() << at::IntArrayRef(shape) << " axis " << axis << " defined " << defined);
      at::Tensor w = at::randn(shape);
      w.view({-1})[0] = -0.0f;
      at::Tensor rm = awkward(channels, -2, 2), rv = awkward(channels, 0, 3);
      at::Tensor b = (defined & 1) ? awkward(channels, -1, 1) : at::Tensor();
      at::Tensor gamma = (defined & 2) ? awkward(channels, -2, 2) : at::Tensor();
      at::Tensor beta = (defined & 4) ? awkward(channels, -1, 1) : at::Tensor();
      auto folded = fold_conv_bn_loops(w, b, rm, rv, 1e-5, gamma, beta, axis);
      ASSERT_TRUE(folded.has_value());
      auto [ew, eb] = pytorch_fold(w, b, rm, rv, 1e-5, gamma, beta, axis);
      expect_same_bits(folded->first, ew, "weight");
      expect_same_bits(folded->second, eb, "bias");
      auto [pw, pb] = fuse_conv_bn_weights(w, b, rm, rv, 1e-5, gamma, beta, axis == 1);
      expect_same_bits(pw, ew, "fuse_conv_bn_weights weight");
      expect_same_bits(pb, eb, "fuse_conv_bn_weights bias");
    }
  }
}

TEST(FoldLoops, LeavesOtherTensorsToATen) {
  at::Tensor w = at::randn({4, 2, 3, 3}), rm = at::randn({4}), rv = at::rand({4});
  EXPECT_FALSE(fold_conv_bn_loops(w.transpose(2, 3), {}, rm, rv, 1e-5, {}, {}, 0)) << "non-contiguous weight";
  EXPECT_FALSE(fold_conv_bn_loops(w.to(at::kDouble), {}, rm, rv, 1e-5, {}, {}, 0)) << "double weight";
  EXPECT_FALSE(fold_conv_bn_loops(w, {}, rm.to(at::kDouble), rv, 1e-5, {}, {}, 0)) << "double statistics";
  EXPECT_FALSE(fold_conv_bn_loops(w, {}, at::randn({3}), rv, 1e-5, {}, {}, 0)) << "channel count";
  EXPECT_FALSE(fold_conv_bn_loops(w, {}, rm, rv, 1e-5, {}, {}, 1)) << "4 statistics for 2 channels";
  // the general path still folds them as PyTorch does
  at::Tensor strided = w.transpose(2, 3);
  auto [fw, fb] = fuse_conv_bn_weights(strided, {}, rm, rv, 1e-5, {}, {});
  auto [ew, eb] = pytorch_fold(strided, {}, rm, rv, 1e-5, {}, {}, 0);
  expect_same_bits(fw, ew, "weight");
  expect_same_bits(fb, eb, "bias");
}

}  // namespace
}  // namespace qfx::nn::detail
