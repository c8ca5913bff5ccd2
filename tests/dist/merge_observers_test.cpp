// Observer merges across ranks, against one observer that saw every batch.
// The ranks are threads of this process joined in a real c10d group (TCPStore
// on loopback, Gloo all-reduce); each observes the batches
// dist::owns_batch gives it, as `qfx quantize --workers` does.

#include "qfx/dist/distributed.h"
#include "qfx/quant/calibration_observers.h"
#include "qfx/quant/fake_quantize.h"
#include "qfx/quant/histogram_observer.h"
#include "qfx/quant/min_max_observers.h"
#include "qfx/quant/simple_observers.h"

#include "qfx/quant/range_search.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <memory>
#include <thread>
#include <vector>

namespace qfx::dist {
namespace {

using quant::ActivationPostProcess;

/// Runs fn(group) on `world` ranks, each in its own thread, and rethrows the
/// first failure.
void run_ranks(int64_t world, const std::function<void(ProcessGroup&)>& fn) {
  std::promise<int> port;
  std::shared_future<int> ready = port.get_future().share();
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  auto rank_main = [&](int64_t rank) {
    try {
      DistOptions options;
      options.world_size = world;
      options.rank = rank;
      options.timeout = std::chrono::milliseconds(20000);
      options.port = rank == 0 ? 0 : ready.get();
      ProcessGroup group(options, [&](int p) { port.set_value(p); });
      fn(group);
    } catch (...) {
      errors[static_cast<size_t>(rank)] = std::current_exception();
      if (rank == 0) {
        try {
          port.set_value(0);  // the others fail fast instead of waiting
        } catch (...) {
        }
      }
    }
  };
  std::vector<std::thread> threads;
  for (int64_t rank = 0; rank < world; ++rank) threads.emplace_back(rank_main, rank);
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

std::vector<at::Tensor> batches(int64_t count, std::vector<int64_t> shape, uint64_t seed) {
  at::manual_seed(seed);
  std::vector<at::Tensor> out;
  for (int64_t i = 0; i < count; ++i) out.push_back(at::randn(shape) * (1.0 + 0.3 * static_cast<double>(i)));
  return out;
}

/// The observer `make()` gives after seeing every batch in one process, and
/// the one each rank holds after seeing its shard and merging (rank order).
struct Merged {
  std::shared_ptr<ActivationPostProcess> alone;
  std::vector<std::shared_ptr<ActivationPostProcess>> ranks;
};

/// `swap`: rank r observes the shard of rank world - 1 - r.
Merged observe_and_merge(const std::function<std::shared_ptr<ActivationPostProcess>()>& make,
                         const std::vector<at::Tensor>& data, int64_t world, bool swap = false) {
  Merged out{make(), {}};
  for (const at::Tensor& x : data) out.alone->forward(x);
  for (int64_t r = 0; r < world; ++r) out.ranks.push_back(make());
  run_ranks(world, [&](ProcessGroup& group) {
    ActivationPostProcess& mine = *out.ranks[static_cast<size_t>(group.rank())];
    const int64_t shard = swap ? world - 1 - group.rank() : group.rank();
    for (size_t i = 0; i < data.size(); ++i) {
      if (owns_batch(static_cast<int64_t>(i), shard, world)) mine.forward(data[i]);
    }
    merge_observer(mine, group);
  });
  return out;
}

void expect_same_qparams(ActivationPostProcess& a, ActivationPostProcess& b) {
  quant::QParams qa = a.calculate_qparams();
  quant::QParams qb = b.calculate_qparams();
  EXPECT_TRUE(at::equal(qa.scale, qb.scale)) << qa.scale << " vs " << qb.scale;
  EXPECT_TRUE(at::equal(qa.zero_point, qb.zero_point)) << qa.zero_point << " vs " << qb.zero_point;
}

TEST(DistMerge, MinMaxObserversMergeToOneProcessBitForBit) {
  std::vector<at::Tensor> data = batches(7, {4, 3, 5}, 1);  // 7 batches: uneven shards
  for (int64_t world : {2, 4}) {
    Merged per_tensor = observe_and_merge([] { return quant::MinMaxObserver().ptr(); }, data, world);
    Merged per_channel = observe_and_merge(
        [] {
          return quant::PerChannelMinMaxObserver(
                     quant::PerChannelMinMaxObserverOptions().ch_axis(1).qscheme(c10::kPerChannelSymmetric))
              .ptr();
        },
        data, world);
    for (const Merged* m : {&per_tensor, &per_channel}) {
      auto& alone = dynamic_cast<quant::MinMaxStatsObserver&>(*m->alone);
      for (const auto& rank : m->ranks) {
        auto& merged = dynamic_cast<quant::MinMaxStatsObserver&>(*rank);
        EXPECT_TRUE(at::equal(alone.min_val, merged.min_val)) << world << " ranks";
        EXPECT_TRUE(at::equal(alone.max_val, merged.max_val)) << world << " ranks";
        expect_same_qparams(*m->alone, *rank);
      }
    }
  }
}

TEST(DistMerge, MovingAverageObserversTakeTheMeanOfTheRanks) {
  std::vector<at::Tensor> data = batches(4, {16}, 2);
  Merged m = observe_and_merge([] { return quant::MovingAverageMinMaxObserver().ptr(); }, data, 2);
  // Each rank's moving average over its two batches, by the definition.
  auto average = [&](size_t first, bool lo) {
    double a = lo ? data[first].min().item<float>() : data[first].max().item<float>();
    double b = lo ? data[first + 2].min().item<float>() : data[first + 2].max().item<float>();
    return a + 0.01 * (b - a);
  };
  auto& merged = dynamic_cast<quant::MinMaxStatsObserver&>(*m.ranks[1]);
  EXPECT_NEAR(merged.min_val.item<double>(), (average(0, true) + average(1, true)) / 2, 1e-6);
  EXPECT_NEAR(merged.max_val.item<double>(), (average(0, false) + average(1, false)) / 2, 1e-6);
}

/// Batches that all reach the same extremes: the first batch covers the
/// range every rank sees, so the histograms need no resampling.
std::vector<at::Tensor> batches_with_one_range(int64_t count, uint64_t seed) {
  std::vector<at::Tensor> out = batches(count, {2000}, seed);
  for (at::Tensor& x : out) {
    x.clamp_(-3.0, 4.0);
    x[0] = -3.0;
    x[1] = 4.0;
  }
  return out;
}

TEST(DistMerge, HistogramObserverMergesExactlyWhenTheFirstBatchCoversTheRange) {
  std::vector<at::Tensor> data = batches_with_one_range(9, 3);
  for (int64_t world : {2, 4}) {
    Merged m = observe_and_merge([] { return quant::HistogramObserver().ptr(); }, data, world);
    auto& alone = dynamic_cast<quant::HistogramObserverImpl&>(*m.alone);
    for (const auto& rank : m.ranks) {
      auto& merged = dynamic_cast<quant::HistogramObserverImpl&>(*rank);
      EXPECT_TRUE(at::equal(alone.histogram, merged.histogram)) << world << " ranks";
      EXPECT_TRUE(at::equal(alone.min_val, merged.min_val));
      EXPECT_TRUE(at::equal(alone.max_val, merged.max_val));
      expect_same_qparams(*m.alone, *rank);
    }
  }
}

TEST(DistMerge, HistogramMergeKeepsTheCountAndIgnoresRankOrder) {
  std::vector<at::Tensor> data = batches(6, {3000}, 4);  // ranges grow batch by batch: resampled
  auto make = [] { return quant::HistogramObserver().ptr(); };
  Merged forward = observe_and_merge(make, data, 3);
  Merged swapped = observe_and_merge(make, data, 3, /*swap=*/true);  // the shards on other ranks
  for (const Merged* m : {&forward, &swapped}) {
    for (const auto& rank : m->ranks) {
      auto& merged = dynamic_cast<quant::HistogramObserverImpl&>(*rank);
      auto& first = dynamic_cast<quant::HistogramObserverImpl&>(*forward.ranks[0]);
      EXPECT_TRUE(at::equal(first.histogram, merged.histogram));  // same on every rank, in any rank order
      // Each rank widened its own range in PyTorch's steps (whole multiples
      // of its bin width); the union covers the data.
      EXPECT_LE(merged.min_val.item<float>(), at::cat(data).min().item<float>());
      EXPECT_GE(merged.max_val.item<float>(), at::cat(data).max().item<float>());
      EXPECT_NEAR(merged.histogram.sum().item<double>(), 6 * 3000, 0.05);
    }
  }
}

TEST(DistMerge, MergeHistogramsDoesNotDependOnThePartsOrder) {
  using quant::BinnedCounts;
  std::vector<BinnedCounts> parts = {{{1, 2, 3, 4}, -1.0, 1.0}, {{5, 0, 0, 1}, -2.0, 0.5}, {{7, 0, 0, 0}, 0.25, 0.25}};
  BinnedCounts one = quant::merge_histograms(parts, 8);
  std::reverse(parts.begin(), parts.end());
  BinnedCounts two = quant::merge_histograms(parts, 8);
  EXPECT_EQ(one.counts, two.counts);
  EXPECT_EQ(one.lo, -2.0);
  EXPECT_EQ(one.hi, 1.0);
  EXPECT_DOUBLE_EQ(one.total(), 23.0);
  // The point mass at 0.25 lands in bin floor((0.25 + 2) / 3 * 8) = 6; one
  // count over [-2, 1] in one bin spreads evenly over the eight.
  BinnedCounts point = quant::merge_histograms({parts[0], {{1}, -2.0, 1.0}}, 8);
  EXPECT_DOUBLE_EQ(point.counts[6], 7.125);
  EXPECT_DOUBLE_EQ(point.counts[0], 0.125);
  // Parts over the union range add exactly.
  BinnedCounts equal = quant::merge_histograms({{{1, 2}, 0, 1}, {{3, 5}, 0, 1}}, 2);
  EXPECT_EQ(equal.counts, (std::vector<double>{4, 7}));
}

TEST(DistMerge, CalibrationObserversMergeExactlyWhenTheRangesAgree) {
  std::vector<at::Tensor> data = batches_with_one_range(6, 5);
  for (auto& x : data) x = at::stack({x, x * 0.5});  // two channels, each with its own fixed range
  auto make = [] {
    return quant::PercentileObserver(quant::CalibrationObserverOptions()
                                         .percentile(99.0)
                                         .qscheme(c10::kPerChannelAffine)
                                         .dtype(c10::kQUInt8)
                                         .ch_axis(0))
        .ptr();
  };
  Merged m = observe_and_merge(make, data, 3);
  auto& alone = dynamic_cast<quant::CalibrationObserver&>(*m.alone);
  for (const auto& rank : m.ranks) {
    auto& merged = dynamic_cast<quant::CalibrationObserver&>(*rank);
    EXPECT_TRUE(at::equal(alone.histogram, merged.histogram));
    EXPECT_TRUE(at::equal(alone.min_val, merged.min_val));
    expect_same_qparams(*m.alone, *rank);
  }
}

TEST(DistMerge, RankThatObservedNothingTakesTheOthersStatistics) {
  std::vector<at::Tensor> data = batches(1, {2, 6}, 6);  // one batch: rank 1 sees nothing
  Merged m = observe_and_merge(
      [] { return quant::PerChannelMinMaxObserver(quant::PerChannelMinMaxObserverOptions().ch_axis(0)).ptr(); }, data,
      2);
  auto& alone = dynamic_cast<quant::MinMaxStatsObserver&>(*m.alone);
  auto& idle = dynamic_cast<quant::MinMaxStatsObserver&>(*m.ranks[1]);
  EXPECT_TRUE(at::equal(alone.min_val, idle.min_val));
  EXPECT_TRUE(at::equal(alone.max_val, idle.max_val));
}

TEST(DistMerge, UnmergeableObserverIsAnErrorNamingIt) {
  try {
    run_ranks(2, [&](ProcessGroup& group) {
      quant::RecordingObserver mine;
      merge_observer(*mine, group);
    });
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find("RecordingObserver"), std::string::npos)
        << e.what_without_backtrace();
  }
}

TEST(DistQat, SynchronisedFakeQuantizeEqualsOneProcessOnTheRanksBatchesTogether) {
  std::vector<at::Tensor> data = batches(2, {8, 4}, 7);
  quant::FakeQuantize alone;
  alone->forward(at::ones({8, 4}));  // a state both runs start from
  alone->forward(at::cat(data));     // one step on the two ranks' batches together
  std::vector<std::shared_ptr<quant::FakeQuantizeImpl>> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.push_back(quant::FakeQuantize().ptr());
    ranks.back()->forward(at::ones({8, 4}));
  }
  run_ranks(2, [&](ProcessGroup& group) {
    auto& mine = *ranks[static_cast<size_t>(group.rank())];
    mine.forward(data[static_cast<size_t>(group.rank())]);
    sync_fake_quantize(mine, group);
  });
  auto& expected = dynamic_cast<quant::MinMaxStatsObserver&>(alone->observer());
  for (const auto& rank : ranks) {
    auto& stats = dynamic_cast<quant::MinMaxStatsObserver&>(rank->observer());
    EXPECT_TRUE(at::equal(expected.min_val, stats.min_val));
    EXPECT_TRUE(at::equal(expected.max_val, stats.max_val));
    EXPECT_TRUE(at::equal(alone->scale, rank->scale));
    EXPECT_TRUE(at::equal(alone->zero_point, rank->zero_point));
  }
}

TEST(DistQat, GradientsAreAveragedOverTheRanks) {
  std::vector<at::Tensor> weights = {at::zeros({3}).requires_grad_(), at::zeros({3}).requires_grad_()};
  run_ranks(2, [&](ProcessGroup& group) {
    at::Tensor w = weights[static_cast<size_t>(group.rank())];
    at::Tensor x = at::tensor({1.0f, 2.0f, 3.0f}) * static_cast<float>(group.rank() + 1);
    (w * x).sum().backward();
    average_gradients({w}, group);
  });
  at::Tensor expected = at::tensor({1.5f, 3.0f, 4.5f});  // mean of x and 2x
  for (const at::Tensor& w : weights) EXPECT_TRUE(at::allclose(w.grad(), expected)) << w.grad();
}

TEST(DistOptions, UrlsAndRanksAreChecked) {
  DistOptions o = DistOptions::from_url("tcp://10.1.2.3:29500", 4, 3);
  EXPECT_EQ(o.host, "10.1.2.3");
  EXPECT_EQ(o.port, 29500);
  for (const char* bad : {"10.1.2.3:29500", "tcp://10.1.2.3", "tcp://:29500", "tcp://h:99999x", "tcp://h/x:1"}) {
    EXPECT_THROW(DistOptions::from_url(bad, 2, 0), c10::Error) << bad;
  }
  EXPECT_THROW(DistOptions::from_url("tcp://h:1", 2, 2), c10::Error);
  EXPECT_THROW(DistOptions::from_url("tcp://h:1", 0, 0), c10::Error);
}

}  // namespace
}  // namespace qfx::dist
