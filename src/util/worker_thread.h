#pragma once
// WorkerThread: a background thread for work that can go on beside the
// calling thread: the interpreter's observer forwards while the float
// forward goes on (ir/interpreter.cpp), and the passes' independent jobs
// while their rewrites go on (BesideRun, run by passes/pass_jobs.cpp).
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

namespace qfx::util {

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
  bool sleeping_ = false;  // the worker waits on work_
  bool stop_ = false;
  std::string error_;
  KeptWarnings warnings_;  // the tasks' warnings, issued by drain()
  std::thread thread_;
};

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

}  // namespace qfx::util
