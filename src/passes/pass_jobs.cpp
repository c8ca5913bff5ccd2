// Pass jobs: run inline, or beside the pass on the worker thread (the one
// place the passes use it).

#include "qfx/passes/pass_jobs.h"

#include "util/worker_thread.h"

#include <torch/nn/module.h>

#include <exception>

namespace qfx::passes {
namespace {

class InlineRun : public JobRun {
 public:
  explicit InlineRun(std::function<void(size_t)> fn) : fn_(std::move(fn)) {}
  void finish(size_t i) override { fn_(i); }

 private:
  std::function<void(size_t)> fn_;
};

/// Each job's warnings and error are kept (either thread may run it) and
/// handed over by finish().
class WorkerRun : public JobRun {
 public:
  WorkerRun(size_t count, std::function<void(size_t)> fn)
      : fn_(std::move(fn)), warnings_(count), errors_(count), run_(count, [this](size_t i) { keep(i); }) {}
  void finish(size_t i) override {
    run_.finish(i);
    warnings_[i].issue();
    if (errors_[i]) std::rethrow_exception(errors_[i]);
  }

 private:
  void keep(size_t i) {
    warnings_[i].keep_during([&] {
      try {
        fn_(i);
      } catch (...) {
        errors_[i] = std::current_exception();
      }
    });
  }

  std::function<void(size_t)> fn_;
  std::vector<util::KeptWarnings> warnings_;
  std::vector<std::exception_ptr> errors_;
  util::BesideRun run_;  // last: stopped before what it writes goes
};

class BesideRunner : public JobRunner {
 public:
  std::unique_ptr<JobRun> start(size_t count, std::function<void(size_t)> fn) override {
    return std::make_unique<WorkerRun>(count, std::move(fn));
  }
  void release(std::vector<std::shared_ptr<torch::nn::Module>> modules) override {
    if (modules.empty() || !util::idle_core_available()) return;  // released here, on return
    util::WorkerThread::instance().submit([held = std::move(modules)]() mutable { held.clear(); }, 0,
                                          "releasing modules");
  }
};

}  // namespace

std::unique_ptr<JobRun> start_inline(size_t, std::function<void(size_t)> fn) {
  return std::make_unique<InlineRun>(std::move(fn));
}

JobRunner& beside_runner() {
  static BesideRunner runner;  // stateless: each thread's runs go to its own worker thread
  return runner;
}

}  // namespace qfx::passes
