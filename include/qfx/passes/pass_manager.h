#pragma once
/// \file
/// PassManager: runs passes in order, lints the graph after each one, and
/// can print the graph after every pass or time each pass. It runs the
/// passes' jobs beside them (pass_jobs.h) and, after each pass, lets go of
/// the modules it retired, beside the next one.
///
/// \code
///   PassManager pm;
///   pm.add("fuse").add("dce").print_after_all(std::cerr);
///   pm.run(gm, options);
/// \endcode

#include "qfx/passes/pass.h"

#include <iosfwd>
#include <string>
#include <vector>

namespace qfx::passes {

/// Wall time of one pass of a run, and of the lint after it.
struct PassTime {
  std::string pass;
  double seconds = 0;
  double lint_seconds = 0;
};

class PassManager {
 public:
  /// Appends the pass called `name` (c10::Error if unknown).
  PassManager& add(const std::string& name);
  /// Appends each name of a comma-separated list (`fuse,dce`).
  PassManager& add_list(const std::string& names);
  /// Lint after each pass (on by default); a lint failure names the pass.
  PassManager& set_lint(bool lint);
  /// Prints `// after NAME` and the graph's IR text to `out` after each pass.
  PassManager& print_after_all(std::ostream& out);
  /// Appends one PassTime per pass to `times` on each run (kept by
  /// reference: it must outlive the runs).
  PassManager& time_passes(std::vector<PassTime>& times);

  /// The passes, in order.
  const std::vector<const PassInfo*>& passes() const { return passes_; }

  /// Runs the passes; true when any of them changed the graph.
  bool run(ir::GraphModule& gm, const PassOptions& options = {}) const;

 private:
  std::vector<const PassInfo*> passes_;
  bool lint_ = true;
  std::ostream* print_after_ = nullptr;
  std::vector<PassTime>* times_ = nullptr;
};

/// `times` as an aligned table: one line per pass (seconds, lint seconds,
/// share of the total) and a total line.
void print_pass_times(std::ostream& out, const std::vector<PassTime>& times);

}  // namespace qfx::passes
