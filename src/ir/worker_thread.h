#pragma once
// WorkerThread: a background thread for work that can go on beside the
// calling thread: the interpreter's observer forwards while the float
// forward goes on, fuse's folds (share), convert's qparams and module
// builds while its rewrite goes on and insert-observers' observers (Beside).
// Tasks run in the order they were submitted (an observer sees its batches
// in order), each under the submitting thread's ATen thread-local state
// (inference mode, grad mode, dispatch keys). drain() waits for every task,
// re-raises the first task error on the calling thread and re-issues the
// tasks' warnings there (c10's warning handler is per thread). Pending
// inputs are capped in bytes: submit() waits while the cap is exceeded.

#include <ATen/ThreadLocalState.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace qfx::ir::detail {

/// A warning handler that passes each warning on to `sink` (c10's handler
/// is per thread: warnings raised on one thread are collected there and
/// re-issued on another).
class WarningSink : public c10::WarningHandler {
 public:
  using Sink = std::function<void(const c10::SourceLocation&, const std::string&, bool)>;
  explicit WarningSink(Sink sink) : sink_(std::move(sink)) {}
  void process(const c10::SourceLocation& location, const std::string& message, const bool verbatim) override {
    sink_(location, message, verbatim);
  }

 private:
  Sink sink_;
};

/// Warnings kept to be issued later, by the thread that takes the result
/// they came with (work done ahead on either thread reports when used).
class KeptWarnings {
 public:
  /// Keeps one warning.
  void add(const c10::SourceLocation& location, const std::string& message, bool verbatim);
  /// Runs `fn` on this thread, keeping the warnings it raises.
  void keep_during(const std::function<void()>& fn);
  /// Issues the kept warnings on the calling thread, in order.
  void issue() const;

 private:
  struct Warning {
    c10::SourceLocation location;
    std::string message;
    bool verbatim;
  };
  std::vector<Warning> warnings_;
};

class WorkerThread {
 public:
  /// The calling thread's worker thread, started on first use.
  static WorkerThread& instance();
  ~WorkerThread();

  /// Queues `task`, which keeps `bytes` of input alive until it has run.
  /// `where` prefixes its error message ("While executing %obs ...").
  void submit(std::function<void()> task, size_t bytes, std::string where);
  /// Waits until every queued task has run (spinning a while first when a
  /// core is idle); then re-issues their warnings and raises the first
  /// error, if any.
  void drain();

 private:
  struct Task {
    std::function<void()> run;
    size_t bytes;
    std::string where;
    at::ThreadLocalState state;
  };

  WorkerThread();
  void loop();
  /// Waits, under `lock`, for a task or stop_: first spinning a while when a
  /// core is idle (waking a sleeping thread costs the submitter a system
  /// call and the task the wake-up's latency), then asleep on work_.
  void wait_for_work(std::unique_lock<std::mutex>& lock);

  std::mutex mutex_;
  std::condition_variable work_;     // tasks queued or stop_, for a sleeping worker
  std::condition_variable changed_;  // tasks done, bytes given back
  std::deque<Task> queue_;
  std::atomic<size_t> unfinished_{0};  // tasks queued or running, also read while spinning
  size_t pending_bytes_ = 0;
  bool sleeping_ = false;            // the worker waits on work_
  bool stop_ = false;
  std::string error_;
  KeptWarnings warnings_;  // the tasks' warnings, issued by drain()
  std::thread thread_;
};

/// Runs fn(0) ... fn(count - 1), each once, on the calling thread and, when
/// a core is idle, on its worker thread too (items taken in order by
/// whichever thread is free). The worker's warnings reach the caller's
/// handler; an error stops both threads and is raised once the worker is idle.
void share(size_t count, const std::function<void(size_t)>& fn);

/// A result worked out ahead of the code that takes it, with the warnings
/// its computation raised and its error, both handed to the taker.
template <typename T>
struct Ahead {
  T value{};
  std::exception_ptr error;
  KeptWarnings warnings;

  /// Runs `fn` on the calling thread, keeping its value, the warnings it
  /// raises and its error.
  template <typename Fn>
  void compute(const Fn& fn) {
    warnings.keep_during([&] {
      try {
        value = fn();
      } catch (...) {
        error = std::current_exception();
      }
    });
  }

  /// Issues the kept warnings on the calling thread, then raises the kept
  /// error or returns the value.
  const T& take() const {
    warnings.issue();
    if (error) std::rethrow_exception(error);
    return value;
  }
};

/// fn(0) ... fn(count - 1) computed by share(), each result with its own
/// warnings and error kept (none raised here), for takers in any order.
template <typename T>
std::vector<Ahead<T>> compute_ahead(size_t count, const std::function<T(size_t)>& fn) {
  std::vector<Ahead<T>> results(count);
  share(count, [&](size_t i) { results[i].compute([&] { return fn(i); }); });
  return results;
}

/// Whether an idle core is there for the worker thread: more hardware
/// threads than ATen's intra-op threads.
bool idle_core_available();

/// The bookkeeping of Beside: items free, running or done, and the worker
/// thread's run through them in order.
class BesideRun {
 public:
  /// Starts the worker thread on fn(0) ... fn(count - 1), in order, when a
  /// core is idle. fn must not throw.
  BesideRun(size_t count, std::function<void(size_t)> fn);
  /// Stops the worker at its next item and waits for the item it is on.
  ~BesideRun();
  BesideRun(const BesideRun&) = delete;
  BesideRun& operator=(const BesideRun&) = delete;

  /// Returns once fn(i) has run: runs it here if nobody has started it,
  /// else runs the next free items here until the worker has finished it.
  void finish(size_t i);

 private:
  enum State : uint8_t { kFree, kRunning, kDone };
  /// Marks the worker's run over (run to the end, stopped, or dropped
  /// unrun by a worker that holds an earlier task's error).
  struct RunOver {
    explicit RunOver(BesideRun* over) : run(over) {}
    RunOver(const RunOver&) = delete;
    RunOver& operator=(const RunOver&) = delete;
    ~RunOver();
    BesideRun* run;
  };
  bool claim(size_t i);
  void run_claimed(size_t i);
  void worker_run();

  std::function<void(size_t)> fn_;
  size_t count_;
  std::unique_ptr<std::atomic<uint8_t>[]> states_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable changed_;
  bool worker_running_ = false;
  size_t help_from_ = 0;  // where finish() looks for free items (the taker's only)
};

/// Results fn(0) ... fn(count - 1) worked out beside the caller: the worker
/// thread, when a core is idle, goes through them in order while the caller
/// goes on with its own work (a pass's rewrite); take(i) hands result i over,
/// computing it on the calling thread if the worker has not started it and
/// waiting if the worker is on it. fn may only read what the caller leaves
/// alone until it has taken that result (resolve modules before, not in fn).
template <typename T>
class Beside {
 public:
  Beside(size_t count, std::function<T(size_t)> fn)
      : fn_(std::move(fn)),
        results_(count),
        run_(count, [this](size_t i) { results_[i].compute([&] { return fn_(i); }); }) {}
  Beside(const Beside&) = delete;
  Beside& operator=(const Beside&) = delete;

  /// Result i, once computed: its warnings issued on the calling thread,
  /// its error raised.
  const T& take(size_t i) {
    run_.finish(i);
    return results_[i].take();
  }

 private:
  std::function<T(size_t)> fn_;
  std::vector<Ahead<T>> results_;
  BesideRun run_;  // last: stopped before the results go
};

/// Lets go of `held` on the worker thread when a core is idle (else here):
/// the destructors of what it was the last owner of (modules a pass replaced
/// or dropped, with their weights) run beside the caller's work.
template <typename T>
void release_beside(T held) {
  if (!idle_core_available()) return;  // released here, on return
  WorkerThread::instance().submit([held = std::move(held)]() mutable { held = T(); }, 0, "releasing modules");
}

}  // namespace qfx::ir::detail
