// The HistogramObserver kernels against the ATen ops they replace: the same
// float bits on random data of many shapes and ranges.

#include "../../src/quant/histogram_math.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace qfx::quant::detail {
namespace {

TEST(HistogramKernels, HistcBinsLikeATen) {
  at::manual_seed(0);
  const std::vector<std::pair<double, double>> ranges = {{-1, 1}, {-3.7, 12.25}, {0, 1e-3}, {-1e6, 1e6}, {0.5, 0.5}};
  for (int trial = 0; trial < 40; ++trial) {
    at::Tensor x = at::randn({1000 + trial * 977}) * (trial % 7 + 0.1) + (trial % 3);
    if (trial % 5 == 0) x = at::round(x * 4) / 4;  // values on bin edges
    auto [lo, hi] = at::aminmax(x);
    for (int64_t bins : {2048, 256, 7}) {
      at::Tensor ours = histc(x, bins, lo.item<double>(), hi.item<double>());
      at::Tensor theirs = at::histc(x, bins, lo.item<double>(), hi.item<double>());
      ASSERT_TRUE(at::equal(ours, theirs)) << "trial " << trial << " bins " << bins;
    }
    for (auto [a, b] : ranges) {
      ASSERT_TRUE(at::equal(histc(x, 64, a, b), at::histc(x, 64, a, b))) << "range " << a << ".." << b;
    }
  }
}

// _combine_histograms with ATen ops, as PyTorch writes it.
at::Tensor combine_with_aten(const at::Tensor& orig_hist, const at::Tensor& new_hist, int64_t up, int64_t down,
                             int64_t start, int64_t bins) {
  at::Tensor upsampled = new_hist.repeat_interleave(up);
  at::Tensor wide = at::zeros({bins * down});
  wide.slice(0, start, bins * up + start).copy_(upsampled);
  at::Tensor integral = at::cumsum(wide, 0, at::kDouble).slice(0, down - 1, c10::nullopt, down);
  at::Tensor shifted = at::zeros({bins});
  shifted.slice(0, 1, bins).copy_(integral.slice(0, 0, -1));
  at::Tensor interpolated = (integral - shifted) / up;
  return orig_hist + interpolated.to(at::kFloat);
}

TEST(HistogramKernels, CombineLikeATen) {
  at::manual_seed(1);
  for (int trial = 0; trial < 20; ++trial) {
    int64_t bins = trial % 2 == 0 ? 2048 : 64;
    int64_t up = trial % 3 == 0 ? 128 : 16;
    int64_t down = up + trial * 3;
    int64_t start = (trial * 37) % (bins * (down - up) + 1);
    at::Tensor old_hist = at::floor(at::rand({bins}) * 1000);
    at::Tensor new_hist = at::floor(at::rand({bins}) * 500);
    ASSERT_TRUE(at::equal(combine_histograms(new_hist, old_hist, up, down, start, bins),
                          combine_with_aten(new_hist, old_hist, up, down, start, bins)))
        << "trial " << trial;
  }
}

}  // namespace
}  // namespace qfx::quant::detail
