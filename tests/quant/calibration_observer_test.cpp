// The calibration observers against their definitions: percentiles of the
// data, TensorRT's entropy calibration written out plainly here, and the
// least squared error of fake quantization found by brute force.

#include "qfx/quant/calibration_observers.h"
#include "qfx/quant/observer_spec.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace qfx::quant {
namespace {

/// numpy.percentile(x, p) (linear interpolation between order statistics).
double percentile_of(const at::Tensor& x, double p) {
  at::Tensor sorted = std::get<0>(x.reshape({-1}).to(at::kDouble).sort());
  double position = p / 100.0 * static_cast<double>(sorted.numel() - 1);
  auto below = static_cast<int64_t>(std::floor(position));
  int64_t above = std::min(below + 1, sorted.numel() - 1);
  double a = sorted[below].item<double>();
  return a + (sorted[above].item<double>() - a) * (position - static_cast<double>(below));
}

double bin_width(const at::Tensor& x, int64_t bins) {
  return (x.max().item<double>() - x.min().item<double>()) / static_cast<double>(bins);
}

TEST(CalibrationObserver, PercentileObserverRangeIsThePercentilesOfTheData) {
  at::manual_seed(0);
  at::Tensor x = at::randn({50000}) * 3 + 1;
  PercentileObserver observer(CalibrationObserverOptions().percentile(99.9));
  observer->forward(x);
  auto [lo, hi] = observer->chosen_range();
  EXPECT_NEAR(lo.item<double>(), percentile_of(x, 0.1), bin_width(x, 2048));
  EXPECT_NEAR(hi.item<double>(), percentile_of(x, 99.9), bin_width(x, 2048));
  QParams expected = observer->calculate_qparams_from(lo, hi);
  QParams q = observer->calculate_qparams();
  EXPECT_TRUE(at::equal(q.scale, expected.scale));
  EXPECT_TRUE(at::equal(q.zero_point, expected.zero_point));
}

TEST(CalibrationObserver, PercentileOverBatchesThatWidenTheRangeStaysWithinTwoBins) {
  at::manual_seed(1);
  std::vector<at::Tensor> batches = {at::randn({20000}), at::randn({20000}) * 4, at::randn({20000}) * 2 - 3};
  PercentileObserver observer(CalibrationObserverOptions().percentile(99.0));
  for (const at::Tensor& batch : batches) observer->forward(batch);
  at::Tensor all = at::cat(batches);
  auto [lo, hi] = observer->chosen_range();
  EXPECT_NEAR(lo.item<double>(), percentile_of(all, 1.0), 2 * bin_width(all, 2048));
  EXPECT_NEAR(hi.item<double>(), percentile_of(all, 99.0), 2 * bin_width(all, 2048));
}

TEST(CalibrationObserver, PerChannelPercentilesArePerRowOfTheChannelAxis) {
  at::manual_seed(2);
  at::Tensor w = at::randn({3, 4000}) * at::tensor({1.0f, 10.0f, 100.0f}).reshape({3, 1});
  PercentileObserver observer(
      CalibrationObserverOptions().percentile(99.5).dtype(c10::kQInt8).qscheme(c10::kPerChannelSymmetric).ch_axis(1));
  observer->forward(w.t());  // channels on axis 1
  auto [lo, hi] = observer->chosen_range();
  ASSERT_EQ(hi.sizes(), at::IntArrayRef({3}));
  for (int64_t c = 0; c < 3; ++c) {
    double magnitude = percentile_of(w[c].abs(), 99.5);
    EXPECT_NEAR(hi[c].item<double>(), magnitude, 2 * bin_width(w[c], 2048)) << "channel " << c;
    EXPECT_NEAR(lo[c].item<double>(), -magnitude, 2 * bin_width(w[c], 2048)) << "channel " << c;
  }
  EXPECT_EQ(observer->calculate_qparams().scale.numel(), 3);
}

/// TensorRT's entropy calibration (pytorch-quantization's
/// `_compute_amax_entropy`, numpy written as loops): the threshold over a
/// histogram of magnitudes with `edges`.
double tensorrt_entropy_amax(std::vector<double> bins, const std::vector<double>& edges, int64_t nbins) {
  bins[0] = bins[1];
  const auto stop = static_cast<int64_t>(bins.size());
  double total = 0;
  for (double b : bins) total += b;
  std::vector<double> divergences;
  for (int64_t i = nbins; i <= stop; ++i) {
    // digitized_space = np.digitize(range(i), np.linspace(0, i, nbins + 1)) - 1, -1 where bins == 0
    std::vector<int64_t> digitized(i);
    for (int64_t idx = 0; idx < i; ++idx) {
      int64_t d = 0;
      while (d + 1 <= nbins && static_cast<double>(i) * (d + 1) / nbins <= static_cast<double>(idx)) ++d;
      digitized[idx] = bins[idx] == 0 ? -1 : d;
    }
    std::vector<double> density_counts(nbins, 0.0);
    std::vector<int64_t> counter(nbins, 0);
    for (int64_t idx = 0; idx < i; ++idx) {
      if (digitized[idx] < 0) continue;
      density_counts[digitized[idx]] += bins[idx];
      counter[digitized[idx]] += 1;
    }
    std::vector<double> q(i, 0.0);
    std::vector<double> p(bins.begin(), bins.begin() + i);
    for (int64_t idx = 0; idx < i; ++idx) {
      if (digitized[idx] >= 0) q[idx] = density_counts[digitized[idx]] / counter[digitized[idx]];
    }
    for (int64_t idx = i; idx < stop; ++idx) p[i - 1] += bins[idx];
    double q_sum = 0;
    double p_sum = 0;
    for (int64_t idx = 0; idx < i; ++idx) q_sum += q[idx], p_sum += p[idx];
    double kl = 0;  // scipy.stats.entropy(p, q)
    for (int64_t idx = 0; idx < i; ++idx) {
      if (p[idx] == 0) continue;
      kl += q[idx] == 0 ? std::numeric_limits<double>::infinity()
                        : p[idx] / p_sum * std::log((p[idx] / p_sum) / (q[idx] / q_sum));
    }
    divergences.push_back(kl);
  }
  size_t last_argmin = 0;
  for (size_t k = 0; k < divergences.size(); ++k) {
    if (divergences[k] <= divergences[last_argmin]) last_argmin = k;
  }
  return edges[last_argmin + static_cast<size_t>(nbins)];
}

TEST(CalibrationObserver, EntropyObserverThresholdIsTensorRtsOnNonNegativeData) {
  at::manual_seed(3);
  at::Tensor x = at::relu(at::randn({40000}) * 2);             // exact zeros: the histogram starts at 0
  x.index_put_({at::arange(0, 5)}, at::linspace(50, 100, 5));  // far outliers to clip
  const double top = x.max().item<double>();
  at::Tensor histogram = at::histc(x, 2048, 0, top).to(at::kDouble);
  std::vector<double> bins(histogram.data_ptr<double>(), histogram.data_ptr<double>() + 2048);
  std::vector<double> edges(2049);
  for (int k = 0; k <= 2048; ++k) edges[k] = top * k / 2048;
  const double expected = tensorrt_entropy_amax(bins, edges, 256);  // quint8, unsigned: 256 levels

  EntropyObserver observer;
  observer->forward(x);
  auto [lo, hi] = observer->chosen_range();
  EXPECT_EQ(lo.item<double>(), 0.0);
  EXPECT_NEAR(hi.item<double>(), expected, 1e-5 * top);
  EXPECT_LT(hi.item<double>(), 62.5);  // four of the five outliers are clipped
}

TEST(CalibrationObserver, EntropyObserverOnSignedDataClipsMagnitudesAsTensorRt) {
  at::manual_seed(4);
  at::Tensor x = at::randn({40000});
  x.index_put_({at::arange(0, 20)}, at::linspace(-12, 12, 20));
  EntropyObserver observer(CalibrationObserverOptions().dtype(c10::kQInt8).qscheme(c10::kPerTensorSymmetric));
  observer->forward(x);
  const double top = x.abs().max().item<double>();
  at::Tensor histogram = at::histc(x.abs(), 2048, 0, top).to(at::kDouble);
  std::vector<double> bins(histogram.data_ptr<double>(), histogram.data_ptr<double>() + 2048);
  std::vector<double> edges(2049);
  for (int k = 0; k <= 2048; ++k) edges[k] = top * k / 2048;
  const double expected = tensorrt_entropy_amax(bins, edges, 128);  // signed: 128 levels a side
  auto [lo, hi] = observer->chosen_range();
  // folding the signed histogram into magnitudes moves counts by up to a bin
  EXPECT_NEAR(hi.item<double>(), expected, 4 * top / 2048);
  EXPECT_NEAR(lo.item<double>(), -expected, 4 * top / 2048);
}

/// The mean squared error of fake-quantizing x with the observer's qparams for [lo, hi].
double fake_quant_mse(UniformObserverBase& observer, const at::Tensor& x, double lo, double hi) {
  QParams q = observer.calculate_qparams_from(at::scalar_tensor(lo, at::kFloat), at::scalar_tensor(hi, at::kFloat));
  auto [qmin, qmax] = observer.quant_range();
  at::Tensor fq =
      at::fake_quantize_per_tensor_affine(x, q.scale.item<double>(), q.zero_point.item<int64_t>(), qmin, qmax);
  return (fq - x).pow(2).mean().item<double>();
}

TEST(CalibrationObserver, MseObserverRangeHasTheLeastFakeQuantizationErrorOfAnyScaledRange) {
  at::manual_seed(5);
  at::Tensor x = at::randn({30000});
  // 4 bits: clipping a normal distribution near 2.5 sigma halves the error of its full range
  MSEObserver observer(CalibrationObserverOptions().quant_min(0).quant_max(15));
  observer->forward(x);
  const double lo = x.min().item<double>();
  const double hi = x.max().item<double>();
  double brute = std::numeric_limits<double>::infinity();
  for (int k = 1; k <= 400; ++k) brute = std::min(brute, fake_quant_mse(*observer, x, lo * k / 400, hi * k / 400));
  auto [chosen_lo, chosen_hi] = observer->chosen_range();
  double chosen = fake_quant_mse(*observer, x, chosen_lo.item<double>(), chosen_hi.item<double>());
  EXPECT_LE(chosen, brute * 1.02);
  EXPECT_LT(chosen, fake_quant_mse(*observer, x, lo, hi) * 0.6);
}

TEST(CalibrationObserver, ConfigNamesAndArgumentsAreCheckedByClass) {
  auto observer = ObserverSpec("qfx.observer.PercentileObserver", {{"percentile", 99.9}, {"bins", 512}}).make();
  auto* percentile = dynamic_cast<PercentileObserverImpl*>(observer.get());
  ASSERT_NE(percentile, nullptr);
  EXPECT_EQ(percentile->options.percentile(), 99.9);
  EXPECT_EQ(percentile->options.bins(), 512);
  EXPECT_NE(dynamic_cast<MSEObserverImpl*>(ObserverSpec("MSEObserver").make().get()), nullptr);
  EXPECT_THROW(ObserverSpec("EntropyObserver", {{"percentile", 99.0}}).make(), c10::Error);
  try {
    ObserverSpec("EntropyObserver", {{"bins", 100}}).make();
    FAIL() << "no error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find("EntropyObserver: bins must be at least 256"),
              std::string::npos)
        << e.what_without_backtrace();
  }
}

TEST(CalibrationObserver, NothingObservedGivesPyTorchsDefaultQParams) {
  PercentileObserver observer;
  QParams q = observer->calculate_qparams();
  EXPECT_EQ(q.scale.item<double>(), 1.0);
  EXPECT_EQ(q.zero_point.item<int64_t>(), 0);
}

}  // namespace
}  // namespace qfx::quant
