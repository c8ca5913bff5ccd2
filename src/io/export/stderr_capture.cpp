// StderrCapture: fd 2 redirected into an unlinked temporary file, read back
// when restored. A file rather than a pipe: a long message cannot block the
// writer.

#include "stderr_capture.h"

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace qfx::io::detail {

StderrCapture::StderrCapture() {
  std::fflush(stderr);
  char name[] = "/tmp/qfx-stderr-XXXXXX";
  file_ = ::mkstemp(name);
  if (file_ < 0) return;  // no capture: the text stays on standard error
  ::unlink(name);
  saved_ = ::dup(STDERR_FILENO);
  if (saved_ < 0 || ::dup2(file_, STDERR_FILENO) < 0) {
    if (saved_ >= 0) ::close(saved_);
    ::close(file_);
    saved_ = file_ = -1;
  }
}

StderrCapture::~StderrCapture() { text(); }

std::string StderrCapture::text() {
  if (saved_ < 0) return "";
  std::fflush(stderr);
  ::dup2(saved_, STDERR_FILENO);
  ::close(saved_);
  saved_ = -1;
  std::string out;
  char buffer[4096];
  ::lseek(file_, 0, SEEK_SET);
  for (ssize_t n; (n = ::read(file_, buffer, sizeof(buffer))) > 0;) out.append(buffer, static_cast<size_t>(n));
  ::close(file_);
  file_ = -1;
  return out;
}

}  // namespace qfx::io::detail
