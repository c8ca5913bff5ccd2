// detail::share: every item runs exactly once, on the caller and (with an
// idle core) the worker thread; the worker's warnings reach the caller's
// handler and an error comes back to the caller.

#include "../../src/ir/worker_thread.h"

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

}  // namespace
}  // namespace qfx::ir::detail
