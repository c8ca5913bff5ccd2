// insert-observers takes its observers from ObserversAhead, which makes them
// on the worker thread a batch ahead: every taken observer is a fresh
// instance of the spec, and a spec that cannot be made fails on the taker.

#include "../../src/passes/observer_inserter.h"

#include "qfx/quant/histogram_observer.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace qfx::passes::detail {
namespace {

TEST(ObserversAhead, FreshInstancesBeyondTheBatches) {
  ObserversAhead ahead(quant::ObserverSpec("HistogramObserver", {{"bins", 64}}));
  std::vector<std::shared_ptr<quant::ActivationPostProcess>> taken;
  for (int i = 0; i < 100; ++i) taken.push_back(ahead.take());  // three batches of 32 and more
  std::set<const void*> distinct;
  for (const auto& observer : taken) {
    auto* histogram = dynamic_cast<quant::HistogramObserverImpl*>(observer.get());
    ASSERT_NE(histogram, nullptr);
    EXPECT_EQ(histogram->options.bins(), 64);
    distinct.insert(histogram);
    distinct.insert(histogram->histogram.data_ptr());
  }
  EXPECT_EQ(distinct.size(), 200u);  // no instance and no histogram handed out twice
  taken[40]->forward(at::arange(10, at::kFloat));
  for (size_t i = 0; i < taken.size(); ++i) {
    auto& h = dynamic_cast<quant::HistogramObserverImpl&>(*taken[i]);
    EXPECT_EQ(h.histogram.sum().item<float>(), i == 40 ? 10.0f : 0.0f) << i;
    EXPECT_EQ(h.min_val.item<float>(), i == 40 ? 0.0f : INFINITY) << i;
  }
}

TEST(ObserversAhead, SpecErrorsReachTheTaker) {
  ObserversAhead ahead(quant::ObserverSpec("HistogramObserver", {{"qscheme", c10::kPerChannelAffine}}));
  for (int i = 0; i < 3; ++i) {
    try {
      ahead.take();
      FAIL() << "no error";
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find("qscheme"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace qfx::passes::detail
