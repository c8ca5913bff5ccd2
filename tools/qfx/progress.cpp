// Progress on stderr (see progress.h).

#include "progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>

namespace qfx::cli {

Progress::Progress(std::string label, int64_t total_batches, bool quiet)
    : label_(std::move(label)), total_(total_batches), quiet_(quiet), terminal_(isatty(STDERR_FILENO) == 1) {}

std::string Progress::status(int64_t batches, int64_t items) const {
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double rate = elapsed > 0 ? items / elapsed : 0;
  double eta = batches > 0 ? elapsed / batches * (total_ - batches) : 0;
  char text[160];
  std::snprintf(text, sizeof(text), "%lld/%lld batches, %.0f images/s, ETA %.0fs", static_cast<long long>(batches),
                static_cast<long long>(total_), rate, std::max(0.0, eta));
  return text;
}

void Progress::update(int64_t batches, int64_t items) {
  if (quiet_ || total_ <= 0) return;
  if (terminal_) {
    constexpr int kWidth = 30;
    int filled = static_cast<int>(kWidth * batches / total_);
    std::cerr << "\r" << label_ << " [" << std::string(filled, '#') << std::string(kWidth - filled, '.') << "] "
              << status(batches, items) << "\033[K" << std::flush;
    drawn_ = true;
    return;
  }
  int64_t tenth = batches * 10 / total_;
  if (tenth > last_tenth_) {
    last_tenth_ = tenth;
    std::cerr << label_ << ": " << status(batches, items) << "\n";
  }
}

void Progress::finish() {
  if (drawn_) std::cerr << "\n";
  drawn_ = false;
}

}  // namespace qfx::cli
