#pragma once
// The benchmarks' sum over a run of PassManager::time_passes.

#include "qfx/passes/pass_manager.h"

#include <cstddef>
#include <vector>

/// Seconds of the passes `begin`..`end` of `times`, their lints included.
inline double pass_seconds(const std::vector<qfx::passes::PassTime>& times, size_t begin, size_t end) {
  double total = 0;
  for (size_t i = begin; i < end; ++i) total += times[i].seconds + times[i].lint_seconds;
  return total;
}
