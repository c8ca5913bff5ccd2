// Pass jobs (pass_jobs.h): run by the PassManager's runner, every job runs
// exactly once, on the caller and (with an idle core) the worker thread,
// while the caller goes on with its own work; each job's warnings and error
// are handed over when the caller takes its result, whatever the order.
// Without a runner each job runs when taken. The PassManager lets go of the
// modules a pass retired.

#include "../../src/util/worker_thread.h"
#include "support/fixtures.h"

#include "qfx/ir/graph_module.h"
#include "qfx/passes/pass_jobs.h"
#include "qfx/passes/pass_manager.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

namespace qfx::passes {
namespace {

class Collect : public c10::WarningHandler {
 public:
  void process(const c10::SourceLocation&, const std::string& message, const bool) override {
    messages.insert(message);
  }
  std::set<std::string> messages;
};

TEST(PassJobs, RunsEveryItemOnceBesideTheCallersWork) {
  constexpr size_t kItems = 64;
  std::vector<std::atomic<int>> runs(kItems);
  std::mutex mutex;
  std::set<std::thread::id> threads;
  JobResults<size_t> beside(&beside_runner(), kItems, [&](size_t i) {
    ++runs[i];
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    std::lock_guard<std::mutex> lock(mutex);
    threads.insert(std::this_thread::get_id());
    return 2 * i;
  });
  for (size_t i = 0; i < kItems; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));  // the caller's own work
    EXPECT_EQ(beside.take(i), 2 * i);
  }
  for (size_t i = 0; i < kItems; ++i) EXPECT_EQ(runs[i].load(), 1) << "item " << i;
  EXPECT_EQ(threads.size(), util::idle_core_available() ? 2u : 1u);
}

TEST(PassJobs, TakesInAnyOrderAndStopsWhenDropped) {
  constexpr size_t kItems = 32;
  std::vector<std::atomic<int>> runs(kItems);
  {
    JobResults<size_t> beside(&beside_runner(), kItems, [&](size_t i) {
      ++runs[i];
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      return i;
    });
    for (size_t i : {size_t{20}, size_t{3}, size_t{31}, size_t{0}}) EXPECT_EQ(beside.take(i), i);
  }  // dropped with items left: the worker stops, nothing runs after this
  int after_drop = 0;
  for (auto& r : runs) after_drop += r.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  int later = 0;
  for (size_t i = 0; i < kItems; ++i) {
    EXPECT_LE(runs[i].load(), 1) << "item " << i;
    later += runs[i].load();
  }
  EXPECT_EQ(later, after_drop);
  for (size_t i : {size_t{0}, size_t{3}, size_t{20}, size_t{31}}) EXPECT_EQ(runs[i].load(), 1) << "item " << i;
}

TEST(PassJobs, WarningsAndErrorsComeWithTheirItem) {
  Collect collect;
  c10::Warning::WarningHandlerGuard guard(&collect);
  JobResults<int> beside(&beside_runner(), 8, [](size_t i) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    TORCH_WARN("item ", i);
    TORCH_CHECK(i != 5, "item ", i, " failed");
    return static_cast<int>(i);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(3));  // the worker is on it or done
  EXPECT_TRUE(collect.messages.empty()) << "warnings issued before their item was taken";
  EXPECT_EQ(beside.take(2), 2);
  EXPECT_EQ(collect.messages, std::set<std::string>{"item 2"});
  EXPECT_EQ(test::error_of([&] { beside.take(5); }), "item 5 failed");
  EXPECT_EQ(collect.messages.count("item 5"), 1u);
  EXPECT_EQ(beside.take(7), 7);
}

TEST(PassJobs, CallerComputesWhenTheWorkerDropsItsTasks) {
  if (!util::idle_core_available()) GTEST_SKIP() << "no worker thread without an idle core";
  util::WorkerThread& worker = util::WorkerThread::instance();
  worker.submit([] { TORCH_CHECK(false, "an earlier task failed"); }, 0, "");
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the worker now drops every task until drain()
  {
    JobResults<size_t> beside(&beside_runner(), 6, [](size_t i) { return i + 1; });
    for (size_t i = 0; i < 6; ++i) EXPECT_EQ(beside.take(i), i + 1);
  }  // and the dropped run does not keep the destructor waiting
  EXPECT_EQ(test::error_of([&] { worker.drain(); }), "an earlier task failed");
}

TEST(PassJobs, WithoutARunnerEachJobRunsWhenTaken) {
  std::vector<size_t> order;
  const std::thread::id caller = std::this_thread::get_id();
  JobResults<size_t> jobs(nullptr, 4, [&](size_t i) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    order.push_back(i);
    return 10 * i;
  });
  EXPECT_TRUE(order.empty());
  EXPECT_EQ(jobs.take(2), 20u);
  EXPECT_EQ(jobs.take(0), 0u);
  EXPECT_EQ(order, (std::vector<size_t>{2, 0}));
  JobResults<int> failing(nullptr, 1, [](size_t) -> int { TORCH_CHECK(false, "job failed"); });
  EXPECT_EQ(test::error_of([&] { failing.take(0); }), "job failed");
}

TEST(PassJobs, PassManagerReleasesRetiredModules) {
  ir::GraphModule gm;
  std::weak_ptr<torch::nn::Module> retired;
  {
    auto linear = torch::nn::Linear(4, 4).ptr();
    retired = linear;
    gm.retire(linear);
  }
  ASSERT_FALSE(retired.expired()) << "a retired module is kept until the PassManager takes it";
  PassManager().add("dce").run(gm);
  util::WorkerThread::instance().drain();  // released on the worker thread when a core is idle
  EXPECT_TRUE(retired.expired());
  EXPECT_TRUE(gm.take_retired().empty());
}

}  // namespace
}  // namespace qfx::passes
