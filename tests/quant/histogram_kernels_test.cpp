// The HistogramObserver kernels against the ATen ops they replace: the same
// float bits on random data of many shapes and ranges.

#include "../../src/quant/histc.h"
#include "../../src/quant/histogram_math.h"

#include "support/simd_paths.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

namespace qfx::quant::detail {
namespace {

/// Runs `body` with the file's AVX2 paths on (where the CPU has them) and off.
template <typename Body>
void with_and_without_avx2(Body body) {
  test::with_and_without_avx2(histc_uses_avx2(), body);
}

void histc_bins_like_aten() {
  at::manual_seed(0);
  const std::vector<std::pair<double, double>> ranges = {{-1, 1}, {-3.7, 12.25}, {0, 1e-3}, {-1e6, 1e6}, {0.5, 0.5}};
  for (int trial = 0; trial < 40; ++trial) {
    at::Tensor x = at::randn({1000 + trial * 977}) * (trial % 7 + 0.1) + (trial % 3);
    if (trial % 5 == 0) x = at::round(x * 4) / 4;  // values on bin edges
    auto [lo, hi] = at::aminmax(x);
    // NaN falls in no bin (ATen's histc reads out of bounds for it)
    at::Tensor with_nan = x.clone();
    if (trial % 4 == 1)
      with_nan.slice(0, 0, c10::nullopt, 97).fill_(NAN), x = with_nan.masked_select(~with_nan.isnan());
    for (int64_t bins : {2048, 256, 1000, 1001, 100, 7, 3}) {
      at::Tensor ours = histc(with_nan, bins, lo.item<double>(), hi.item<double>());
      at::Tensor theirs = at::histc(x, bins, lo.item<double>(), hi.item<double>());
      ASSERT_TRUE(at::equal(ours, theirs)) << "trial " << trial << " bins " << bins;
    }
    for (auto [a, b] : ranges) {
      ASSERT_TRUE(at::equal(histc(x, 64, a, b), at::histc(x, 64, a, b))) << "range " << a << ".." << b;
    }
  }
}

TEST(HistogramKernels, HistcBinsLikeATen) { with_and_without_avx2(histc_bins_like_aten); }

TEST(HistogramKernels, HistcOfARangeWiderThanFloatLikeATen) {
  // hi - lo overflows float: (x - lo) / inf is 0, every element in bin 0.
  // (ATen's edges overflow too, and it counts elements outside such a range;
  // the observer's ranges hold all its data.)
  with_and_without_avx2([] {
    at::Tensor x = at::tensor({-2e38f, -1.5e38f, -0.5e38f, 0.0f, 0.5e38f, 1e38f, 2e38f});
    EXPECT_TRUE(at::equal(histc(x, 6, -2e38, 2e38), at::histc(x, 6, -2e38, 2e38)));
    at::Tensor same = at::full({1000}, 1e38f);
    EXPECT_TRUE(at::equal(histc(same, 2048, -2e38, 2e38), at::histc(same, 2048, -2e38, 2e38)));
  });
}

void histc_inside_like_histc_or_nothing() {
  at::manual_seed(2);
  for (int64_t n : {5, 1000, 2000, 300000}) {  // up to 2050: counted straight; 300000: a chunk per thread
    at::Tensor x = at::relu(at::randn({n}));
    x[1] = 0.0f;
    const float hi = x.max().item<float>();
    for (int64_t bins : {2048, 1000}) {
      std::optional<at::Tensor> ours = histc_inside(x, bins, 0.0f, hi);
      ASSERT_TRUE(ours.has_value()) << n;
      EXPECT_TRUE(at::equal(*ours, at::histc(x, bins, 0.0, hi))) << n << " " << bins;
    }
    for (float odd : {-1e-3f, 2 * hi, NAN, -0.0f}) {
      at::Tensor y = x.clone();
      y[n - 1] = odd;  // in the last chunk
      EXPECT_FALSE(histc_inside(y, 2048, 0.0f, hi).has_value()) << n << " " << odd;
    }
    // a zero of the other sign than a zero bound would replace the bound
    at::Tensor negated = -x;  // -0.0 where x is 0
    EXPECT_FALSE(histc_inside(negated, 2048, -hi, 0.0f).has_value()) << n;
    std::optional<at::Tensor> same_zero = histc_inside(negated, 2048, -hi, -0.0f);
    ASSERT_TRUE(same_zero.has_value()) << n;
    EXPECT_TRUE(at::equal(*same_zero, at::histc(negated, 2048, -hi, 0.0))) << n;
    EXPECT_TRUE(histc_inside(negated, 2048, -hi, 1.0f).has_value()) << n;
  }
}

TEST(HistogramKernels, HistcInsideLikeHistcOrNothing) { with_and_without_avx2(histc_inside_like_histc_or_nothing); }

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
    if (trial % 4 == 1) old_hist = at::round(at::rand({bins}) * 128000) / 128;  // a combined histogram: exact sums
    if (trial % 4 == 3) old_hist = at::rand({bins}) * at::pow(10, at::rand({bins}) * 8 - 4);  // sums that round
    at::Tensor new_hist = at::floor(at::rand({bins}) * 500);
    ASSERT_TRUE(at::equal(combine_histograms(new_hist, old_hist, up, down, start, bins),
                          combine_with_aten(new_hist, old_hist, up, down, start, bins)))
        << "trial " << trial;
  }
}

// _compute_quantization_error with ATen ops, as PyTorch writes it.
double quantization_error_with_aten(const at::Tensor& histogram, double bin_width, int64_t start_bin, int64_t end_bin,
                                    int64_t dst_nbins) {
  auto get_norm = [](const at::Tensor& begin, const at::Tensor& end, const at::Tensor& density) {
    return density * ((end * end * end - begin * begin * begin) / 3);
  };
  const int64_t bins = histogram.numel();
  double dst_bin_width = bin_width * static_cast<double>(end_bin - start_bin + 1) / static_cast<double>(dst_nbins);
  if (dst_bin_width == 0.0) return 0.0;
  at::Tensor src_bin_begin = (at::arange(bins) - start_bin) * bin_width;
  at::Tensor src_bin_end = src_bin_begin + bin_width;
  at::Tensor dst_bin_of_begin = at::clamp(at::div(src_bin_begin, dst_bin_width, "floor"), 0, dst_nbins - 1);
  at::Tensor dst_bin_of_begin_center = (dst_bin_of_begin + 0.5) * dst_bin_width;
  at::Tensor dst_bin_of_end = at::clamp(at::div(src_bin_end, dst_bin_width, "floor"), 0, dst_nbins - 1);
  at::Tensor density = histogram / bin_width;
  at::Tensor norm = at::zeros({bins});
  at::Tensor half = at::scalar_tensor(dst_bin_width / 2, at::kFloat);
  at::Tensor minus_half = at::scalar_tensor(-dst_bin_width / 2, at::kFloat);
  norm += get_norm(src_bin_begin - dst_bin_of_begin_center, at::ones({bins}) * (dst_bin_width / 2), density);
  norm += (dst_bin_of_end - dst_bin_of_begin - 1) * get_norm(minus_half, half, density);
  at::Tensor dst_bin_of_end_center = dst_bin_of_end * dst_bin_width + dst_bin_width / 2;
  norm += get_norm(minus_half, src_bin_end - dst_bin_of_end_center, density);
  return norm.sum().item<double>();
}

void quantization_error_like_aten() {
  at::manual_seed(2);
  int64_t compared = 0;
  for (int trial = 0; trial < 34; ++trial) {
    const int64_t bins = trial % 3 == 0 ? 256 : trial % 5 == 2 ? 1001 : 2048;  // 1001: a scalar tail
    at::Tensor hist = at::floor(at::rand({bins}) * (trial % 2 == 0 ? 1000 : 7));
    if (trial % 4 == 1) hist.slice(0, 0, bins / 3).zero_();                       // a ReLU-like empty left part
    if (trial % 6 == 5) hist.index_put_({at::randint(bins, {bins / 5})}, -0.75);  // a combined histogram's bins
    // widths up to where cubes overflow float (empty bins are then no longer +0 outright)
    const double width =
        trial >= 30 ? std::pow(10.0, 9 + trial % 4) : std::pow(10.0, trial % 7 - 4) * (1 + trial / 7.0);
    for (int64_t start = 0; start < bins; start += 1 + bins / 23) {
      for (int64_t end = bins - 1; end >= start; end -= 1 + bins / 19) {
        for (int64_t levels : {256, 128}) {
          const double ours = quantization_error(hist, width, start, end, levels);
          const double theirs = quantization_error_with_aten(hist, width, start, end, levels);
          ASSERT_TRUE(ours == theirs || (std::isnan(ours) && std::isnan(theirs)))
              << ours << " vs " << theirs << ", trial " << trial << " bins [" << start << ", " << end << "] levels "
              << levels;
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 10000);
}

TEST(HistogramKernels, QuantizationErrorLikeATen) { with_and_without_avx2(quantization_error_like_aten); }

// HistogramObserver._non_linear_param_search as PyTorch 1.13 writes it: a
// step of 1e-5 in alpha or beta per iteration, linear scans for the bins.
std::pair<float, float> param_search_like_python(const at::Tensor& hist, float min_val, float max_val,
                                                 int64_t dst_nbins) {
  const int64_t bins = hist.numel();
  const at::Tensor min_tensor = at::scalar_tensor(min_val), max_tensor = at::scalar_tensor(max_val);
  const at::Tensor bin_width = (max_tensor - min_tensor) / bins;
  const double total = hist.sum().item<double>();
  at::Tensor csum_tensor = at::cumsum(hist, 0);
  const float* csum = csum_tensor.data_ptr<float>();
  double alpha = 0.0, beta = 1.0, norm_min = INFINITY;
  int64_t start_bin = 0, end_bin = bins - 1;
  while (alpha < beta) {
    const double next_alpha = alpha + 1e-5, next_beta = beta - 1e-5;
    int64_t l = start_bin, r = end_bin;
    while (l < end_bin && csum[l] < static_cast<float>(next_alpha * total)) ++l;
    while (r > start_bin && csum[r] > static_cast<float>(next_beta * total)) --r;
    int64_t next_start_bin = start_bin, next_end_bin = end_bin;
    if ((l - start_bin) > (end_bin - r)) {
      next_start_bin = l;
      alpha = next_alpha;
    } else {
      next_end_bin = r;
      beta = next_beta;
    }
    if (next_start_bin == start_bin && next_end_bin == end_bin) continue;
    const double norm = quantization_error(hist, (max_tensor.item<double>() - min_tensor.item<double>()) / bins,
                                           next_start_bin, next_end_bin, dst_nbins);
    if (norm > norm_min) break;
    norm_min = norm;
    start_bin = next_start_bin;
    end_bin = next_end_bin;
  }
  return {(min_tensor + bin_width * start_bin).item<float>(), (min_tensor + bin_width * (end_bin + 1)).item<float>()};
}

// Histograms the search meets: dense, sparse (a few values among 2048 bins,
// where most steps change nothing), one bin, two bins, a ReLU-like empty
// left part, a combined histogram's negative bins (cSum not monotone), and
// fractional bins after a huge one (cSum's double running sum matters).
at::Tensor search_case(int trial) {
  const int64_t bins = trial % 5 == 0 ? 256 : 2048;
  at::Tensor hist = at::zeros({bins});
  switch (trial % 7) {
    case 0: hist = at::floor(at::rand({bins}) * 1000); break;
    case 1: hist.index_put_({at::randint(bins, {16})}, 1.0); break;
    case 2: hist[trial % bins] = 64; break;
    case 3: hist[3] = 5, hist[bins - 7] = 2; break;
    case 4: hist = at::floor(at::rand({bins}) * 7), hist.slice(0, 0, bins / 2).zero_(); break;
    case 5: hist = at::floor(at::rand({bins}) * 3), hist.index_put_({at::randint(bins, {400})}, -0.9); break;
    default: hist = at::rand({bins}) * 0.9, hist[0] = 16777216.0f;
  }
  return hist;
}

TEST(HistogramKernels, ParamSearchLikePython) {
  at::manual_seed(3);
  for (int trial = 0; trial < 56; ++trial) {
    const at::Tensor hist = search_case(trial);
    const float min_val = -0.5f * (trial % 4) - 0.013f * trial, max_val = 0.25f + 1.37f * trial;
    for (int64_t levels : {256, 128}) {
      const auto [lo, hi] = non_linear_param_search(hist, min_val, max_val, levels);
      const auto [want_lo, want_hi] = param_search_like_python(hist, min_val, max_val, levels);
      EXPECT_EQ(lo, want_lo) << "trial " << trial << " levels " << levels;
      EXPECT_EQ(hi, want_hi) << "trial " << trial << " levels " << levels;
    }
  }
}

}  // namespace
}  // namespace qfx::quant::detail
