// WorkerThread: a FIFO of tasks on one background thread.

#include "worker_thread.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <thread>
#include <utility>

namespace qfx::util {
namespace {

constexpr size_t kMaxPendingBytes = size_t{256} << 20;

/// How long the worker spins for its next task, and drain() for the last
/// one, before they sleep: about the gap between two observed nodes'
/// forwards on a small model.
constexpr std::chrono::microseconds kSpin{100};

/// A short pause in a spin loop.
inline void pause() {
#ifdef __SSE2__
  for (int i = 0; i < 64; ++i) _mm_pause();
#else
  std::this_thread::yield();
#endif
}

/// Spins until `done()` or kSpin has passed; returns done().
template <typename Done>
bool spin_until(const Done& done) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  while (!done()) {
    pause();
    if (std::chrono::steady_clock::now() >= until) return done();
  }
  return true;
}

}  // namespace

WorkerThread& WorkerThread::instance() {
  thread_local WorkerThread thread;  // runs from several threads do not wait for each other
  return thread;
}

WorkerThread::WorkerThread() : thread_([this] { loop(); }) {}

WorkerThread::~WorkerThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_.notify_one();
  thread_.join();
}

void WorkerThread::submit(std::function<void()> task, size_t bytes, std::string where) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return pending_bytes_ == 0 || pending_bytes_ + bytes <= kMaxPendingBytes; });
  pending_bytes_ += bytes;
  queue_.push_back({std::move(task), bytes, std::move(where), at::ThreadLocalState()});
  ++unfinished_;
  if (sleeping_) work_.notify_one();
}

void WorkerThread::drain() {
  KeptWarnings warnings;
  std::string error;
  if (idle_core_available()) spin_until([&] { return unfinished_.load(std::memory_order_acquire) == 0; });
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return unfinished_ == 0; });
    std::swap(warnings, warnings_);
    error.swap(error_);
  }
  warnings.issue();
  TORCH_CHECK(error.empty(), error);
}

void WorkerThread::loop() {
  WarningSink collect([this](const c10::SourceLocation& location, const std::string& message, bool verbatim) {
    std::lock_guard<std::mutex> lock(mutex_);
    warnings_.add(location, message, verbatim);
  });
  c10::Warning::set_warning_handler(&collect);
  at::init_num_threads();  // OpenMP users (oneDNN) here see ATen's thread count, not the core count
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    if (queue_.empty() && !stop_) wait_for_work(lock);
    if (queue_.empty()) return;  // stop_
    Task task = std::move(queue_.front());
    queue_.pop_front();
    const bool skip = !error_.empty();  // after an error, the rest of the run is dropped
    lock.unlock();
    std::string failure;
    if (!skip) {
      try {
        at::ThreadLocalStateGuard state(task.state);
        task.run();
      } catch (const c10::Error& e) {
        failure = e.what_without_backtrace();
      } catch (const std::exception& e) {
        failure = e.what();
      }
      if (!failure.empty() && !task.where.empty()) failure = task.where + ": " + failure;
    }
    task.run = nullptr;  // the inputs go before the bytes are given back
    lock.lock();
    if (!failure.empty() && error_.empty()) error_ = std::move(failure);
    pending_bytes_ -= task.bytes;
    --unfinished_;
    changed_.notify_all();
  }
}

void WorkerThread::wait_for_work(std::unique_lock<std::mutex>& lock) {
  if (idle_core_available()) {
    lock.unlock();
    // nothing runs while the worker waits: the unfinished tasks are queued ones
    spin_until([&] { return unfinished_.load(std::memory_order_acquire) > 0; });
    lock.lock();
  }
  sleeping_ = true;
  work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
  sleeping_ = false;
}

void KeptWarnings::add(const c10::SourceLocation& location, const std::string& message, bool verbatim) {
  warnings_.push_back({location, message, verbatim});
}

void KeptWarnings::keep_during(const std::function<void()>& fn) {
  WarningSink keep([this](const c10::SourceLocation& location, const std::string& message, bool verbatim) {
    add(location, message, verbatim);
  });
  c10::Warning::WarningHandlerGuard guard(&keep);
  fn();
}

void KeptWarnings::issue() const {
  for (const Warning& w : warnings_) c10::Warning::warn(w.location, w.message, w.verbatim);
}

BesideRun::BesideRun(size_t count, std::function<void(size_t)> fn)
    : fn_(std::move(fn)), count_(count), states_(new std::atomic<uint8_t>[count]) {
  for (size_t i = 0; i < count; ++i) states_[i] = kFree;
  if (count < 2 || !idle_core_available()) return;  // the caller computes each item as it takes it
  worker_running_ = true;
  auto over = std::make_shared<RunOver>(this);
  WorkerThread::instance().submit([this, over] { worker_run(); }, 0, "");
}

BesideRun::~BesideRun() {
  stop_ = true;
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return !worker_running_; });
}

BesideRun::RunOver::~RunOver() {
  std::lock_guard<std::mutex> lock(run->mutex_);  // notified under the lock: the waiter may destroy `run` next
  run->worker_running_ = false;
  run->changed_.notify_all();
}

bool BesideRun::claim(size_t i) {
  uint8_t free = kFree;
  return states_[i].compare_exchange_strong(free, kRunning);
}

void BesideRun::run_claimed(size_t i) {
  fn_(i);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    states_[i] = kDone;
  }
  changed_.notify_all();
}

void BesideRun::worker_run() {
  for (size_t i = 0; i < count_ && !stop_; ++i) {
    if (claim(i)) run_claimed(i);
  }
}

void BesideRun::finish(size_t i) {
  if (claim(i)) return run_claimed(i);
  // the worker is on it: rather than sleep, do the next free item meanwhile
  for (help_from_ = std::max(help_from_, i + 1); states_[i] != kDone && help_from_ < count_; ++help_from_) {
    if (claim(help_from_)) run_claimed(help_from_);
  }
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return states_[i] == kDone; });
}

bool idle_core_available() {
  static const unsigned hardware_threads = std::thread::hardware_concurrency();
  return hardware_threads > static_cast<unsigned>(at::get_num_threads());
}

}  // namespace qfx::util
