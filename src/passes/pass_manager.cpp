// PassManager: a pipeline of registered passes, linted between passes; it
// runs the passes' jobs beside them and lets go of the modules they retire.

#include "qfx/passes/pass_manager.h"

#include "qfx/ir/graph_module.h"
#include "qfx/passes/pass_jobs.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ostream>
#include <sstream>

namespace qfx::passes {

PassManager& PassManager::add(const std::string& name) {
  passes_.push_back(&find_pass(name));
  return *this;
}

PassManager& PassManager::add_list(const std::string& names) {
  std::stringstream stream(names);
  std::string name;
  while (std::getline(stream, name, ',')) {
    TORCH_CHECK(!name.empty(), "empty pass name in \"", names, "\"");
    add(name);
  }
  return *this;
}

PassManager& PassManager::set_lint(bool lint) {
  lint_ = lint;
  return *this;
}

PassManager& PassManager::print_after_all(std::ostream& out) {
  print_after_ = &out;
  return *this;
}

PassManager& PassManager::time_passes(std::vector<PassTime>& times) {
  times_ = &times;
  return *this;
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

/// Runs `pass`; an error that names no node (`%conv`) gets the pass's name,
/// so no bare ATen message leaves a pass.
bool run_naming_the_pass(const PassInfo& pass, ir::GraphModule& gm, const PassOptions& options) {
  try {
    return pass.run(gm, options);
  } catch (const c10::Error& e) {
    std::string what = e.what_without_backtrace();
    if (what.find('%') != std::string::npos || what.rfind(pass.name, 0) == 0) throw;
    TORCH_CHECK(false, pass.name, ": ", what);
  }
}

}  // namespace

bool PassManager::run(ir::GraphModule& gm, const PassOptions& options) const {
  PassOptions with_jobs = options;
  if (with_jobs.jobs == nullptr) with_jobs.jobs = &beside_runner();
  bool changed = false;
  for (const PassInfo* pass : passes_) {
    PassTime time{pass->name};
    Clock::time_point start = Clock::now();
    changed = run_naming_the_pass(*pass, gm, with_jobs) || changed;
    with_jobs.jobs->release(gm.take_retired());
    time.seconds = seconds_since(start);
    if (lint_) {
      start = Clock::now();
      try {
        gm.lint();
      } catch (const c10::Error& e) {
        TORCH_CHECK(false, "after pass ", pass->name, ": ", e.what_without_backtrace());
      }
      time.lint_seconds = seconds_since(start);
    }
    if (times_) times_->push_back(time);
    if (print_after_) *print_after_ << "// after " << pass->name << "\n" << gm.graph().to_string() << "\n";
  }
  return changed;
}

void print_pass_times(std::ostream& out, const std::vector<PassTime>& times) {
  double passes = 0, lints = 0;
  size_t width = 5;
  for (const PassTime& t : times) {
    passes += t.seconds;
    lints += t.lint_seconds;
    width = std::max(width, t.pass.size());
  }
  double total = passes + lints;
  auto line = [&](const std::string& name, double seconds, double lint) {
    char text[160];
    std::snprintf(text, sizeof text, "%-*s %9.4f s  lint %8.4f s  %5.1f%%\n", static_cast<int>(width), name.c_str(),
                  seconds, lint, total > 0 ? 100 * (seconds + lint) / total : 0.0);
    out << text;
  };
  for (const PassTime& t : times) line(t.pass, t.seconds, t.lint_seconds);
  line("total", passes, lints);
}

}  // namespace qfx::passes
