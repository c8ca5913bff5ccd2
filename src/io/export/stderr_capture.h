#pragma once
// What a library writes to standard error while a call runs. Internal to src/io.

#include <string>

namespace qfx::io::detail {

/// Sends file descriptor 2 to a temporary file from construction until
/// text() or destruction, which restore it. QNNPACK (in LibTorch) writes the
/// reason of a failure to standard error and raises a bare assertion; the
/// caller puts the reason into its own error instead.
class StderrCapture {
 public:
  StderrCapture();
  ~StderrCapture();
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  /// Restores standard error and returns what was written meanwhile.
  std::string text();

 private:
  int saved_ = -1;
  int file_ = -1;
};

}  // namespace qfx::io::detail
