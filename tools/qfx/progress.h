#pragma once
// Progress of calibration and evaluation on stderr: a bar redrawn in place
// when stderr is a terminal (batches, images/s, ETA), a plain line every
// tenth of the work otherwise, nothing when quiet.

#include <chrono>
#include <cstdint>
#include <string>

namespace qfx::cli {

class Progress {
 public:
  Progress(std::string label, int64_t total_batches, bool quiet);
  /// After each batch: batches and items done so far.
  void update(int64_t batches, int64_t items);
  /// Ends the bar's line (terminal mode).
  void finish();

 private:
  std::string status(int64_t batches, int64_t items) const;

  std::string label_;
  int64_t total_;
  bool quiet_, terminal_;
  int64_t last_tenth_ = 0;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace qfx::cli
