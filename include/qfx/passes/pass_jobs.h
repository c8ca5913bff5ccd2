#pragma once
/// \file
/// Pass jobs: the work a pass can hand over to be done beside its rewrite.
///
/// A pass reads top to bottom as "collect matches, then rewrite". Where each
/// match needs an independent computation that reads only what the rewrite
/// leaves alone (a fused module built from its parts, a reference module
/// from a float one, a quantized module from a reference one), the pass
/// declares it as jobs fn(0) ... fn(count - 1) and its rewrite takes the
/// results in its own order:
///
/// \code
///   JobResults<Built> built(options.jobs, matches.size(), [&](size_t i) { return build(matches[i]); });
///   for (size_t i = 0; i < matches.size(); ++i) rewrite(matches[i], built.take(i));
/// \endcode
///
/// Who runs the jobs is the JobRunner in the pass's options: the PassManager's
/// runs them on a worker thread when a core is idle (the only place qfx's
/// passes use one); without a runner each job runs when it is taken, so a
/// pass called directly computes everything in order on the calling thread.

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace torch::nn {
class Module;
}

namespace qfx::passes {

/// A started run of jobs.
class JobRun {
 public:
  virtual ~JobRun() = default;
  /// Returns once job i has run (running it now if nobody has started it);
  /// then issues the warnings it raised and raises its error, if any.
  virtual void finish(size_t i) = 0;
};

/// Runs a pass's jobs; the PassManager's runs them beside the pass.
class JobRunner {
 public:
  virtual ~JobRunner() = default;
  /// Starts fn(0) ... fn(count - 1). fn(i) must read only what the pass
  /// leaves alone until it has taken result i. Stopping the run (destroying
  /// it) waits for the job under way and drops the others.
  virtual std::unique_ptr<JobRun> start(size_t count, std::function<void(size_t)> fn) = 0;
  /// Lets go of modules a pass replaced or dropped (their destructors free
  /// weights: a large part of convert's time).
  virtual void release(std::vector<std::shared_ptr<torch::nn::Module>> modules) = 0;
};

/// Job i runs when it is taken, on the calling thread.
std::unique_ptr<JobRun> start_inline(size_t count, std::function<void(size_t)> fn);

/// The results of jobs fn(0) ... fn(count - 1), run by `runner` (inline when null).
template <typename T>
class JobResults {
 public:
  JobResults(JobRunner* runner, size_t count, std::function<T(size_t)> fn) : fn_(std::move(fn)), values_(count) {
    auto job = [this](size_t i) { values_[i] = fn_(i); };
    run_ = runner != nullptr ? runner->start(count, job) : start_inline(count, job);
  }
  JobResults(const JobResults&) = delete;
  JobResults& operator=(const JobResults&) = delete;

  /// Result i, once computed (each taken once): the warnings its job raised
  /// are issued now, on the calling thread, and its error is raised now.
  T take(size_t i) {
    run_->finish(i);
    return std::move(*values_[i]);
  }

 private:
  std::function<T(size_t)> fn_;
  std::vector<std::optional<T>> values_;
  std::unique_ptr<JobRun> run_;  // last: stopped before what the jobs write goes
};

/// The PassManager's runner: jobs on the calling thread's worker thread
/// when a core is idle, in order, the rewrite running any job it takes
/// before the worker has started it.
JobRunner& beside_runner();

}  // namespace qfx::passes
