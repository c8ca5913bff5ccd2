// detail::share: every item runs exactly once, on the caller and (with an
// idle core) the worker thread; the worker's warnings reach the caller's
// handler and an error comes back to the caller. detail::Beside: the same
// while the caller goes on with its own work, each item's warnings and
// error handed over when the caller takes it, whatever the order.

#include "../../src/ir/worker_thread.h"
#include "support/fixtures.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

namespace qfx::ir::detail {
namespace {

TEST(WorkerShare, RunsEveryItemOnce) {
  constexpr size_t kItems = 64;
  std::vector<std::atomic<int>> runs(kItems);
  std::mutex mutex;
  std::set<std::thread::id> threads;
  share(kItems, [&](size_t i) {
    ++runs[i];
    std::this_thread::sleep_for(std::chrono::microseconds(500));  // long enough for the worker to join in
    std::lock_guard<std::mutex> lock(mutex);
    threads.insert(std::this_thread::get_id());
  });
  for (size_t i = 0; i < kItems; ++i) EXPECT_EQ(runs[i].load(), 1) << "item " << i;
  EXPECT_EQ(threads.size(), idle_core_available() ? 2u : 1u);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 1u);
}

class Collect : public c10::WarningHandler {
 public:
  void process(const c10::SourceLocation&, const std::string& message, const bool) override {
    messages.insert(message);
  }
  std::set<std::string> messages;
};

TEST(WorkerShare, WarningsReachTheCallersHandler) {
  Collect collect;
  c10::Warning::WarningHandlerGuard guard(&collect);
  share(16, [](size_t i) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    TORCH_WARN("item ", i);
  });
  EXPECT_EQ(collect.messages.size(), 16u);
  EXPECT_EQ(collect.messages.count("item 15"), 1u);
}

TEST(WorkerShare, ErrorsReachTheCaller) {
  for (size_t failing : {size_t{0}, size_t{7}, size_t{15}}) {
    try {
      share(16, [&](size_t i) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        TORCH_CHECK(i != failing, "item ", i, " failed");
      });
      ADD_FAILURE() << "no error for item " << failing;
    } catch (const c10::Error& e) {
      EXPECT_EQ(std::string(e.what_without_backtrace()), "item " + std::to_string(failing) + " failed");
    }
  }
  std::atomic<int> runs{0};
  share(4, [&](size_t) { ++runs; });  // usable after an error
  EXPECT_EQ(runs.load(), 4);
}

TEST(WorkerBeside, RunsEveryItemOnceBesideTheCallersWork) {
  constexpr size_t kItems = 64;
  std::vector<std::atomic<int>> runs(kItems);
  std::mutex mutex;
  std::set<std::thread::id> threads;
  Beside<size_t> beside(kItems, [&](size_t i) {
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
  EXPECT_EQ(threads.size(), idle_core_available() ? 2u : 1u);
}

TEST(WorkerBeside, TakesInAnyOrderAndStopsWhenDropped) {
  constexpr size_t kItems = 32;
  std::vector<std::atomic<int>> runs(kItems);
  {
    Beside<size_t> beside(kItems, [&](size_t i) {
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

TEST(WorkerBeside, WarningsAndErrorsComeWithTheirItem) {
  Collect collect;
  c10::Warning::WarningHandlerGuard guard(&collect);
  Beside<int> beside(8, [](size_t i) {
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

TEST(WorkerBeside, CallerComputesWhenTheWorkerDropsItsTasks) {
  if (!idle_core_available()) GTEST_SKIP() << "no worker thread without an idle core";
  WorkerThread& worker = WorkerThread::instance();
  worker.submit([] { TORCH_CHECK(false, "an earlier task failed"); }, 0, "");
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the worker now drops every task until drain()
  {
    Beside<size_t> beside(6, [](size_t i) { return i + 1; });
    for (size_t i = 0; i < 6; ++i) EXPECT_EQ(beside.take(i), i + 1);
  }  // and the dropped run does not keep the destructor waiting
  EXPECT_EQ(test::error_of([&] { worker.drain(); }), "an earlier task failed");
}

}  // namespace
}  // namespace qfx::ir::detail
