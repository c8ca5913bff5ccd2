// check_load_does_not_crash: a trial load in a forked child.

#include "crash_guard.h"

#include <c10/util/Exception.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace qfx::io::detail {
namespace {

/// In the child: no output (the parent's own load reports), exit 0 when
/// `load` returns, 1 when it throws. _exit: no atexit handlers, no flushing
/// of the parent's buffers a second time.
[[noreturn]] void run_child(const std::function<void()>& load) {
  int null = open("/dev/null", O_WRONLY);
  if (null >= 0) {
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
  }
  int code = 0;
  try {
    load();
  } catch (...) {
    code = 1;
  }
  _exit(code);
}

}  // namespace

void check_load_does_not_crash(const std::function<void()>& load, const std::string& what) {
  pid_t child = fork();
  if (child < 0) return;
  if (child == 0) run_child(load);
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return;
  }
  TORCH_CHECK(!WIFSIGNALED(status), what, ": LibTorch crashed (", strsignal(WTERMSIG(status)),
              ") loading it: the archive's code or pickles are corrupt");
}

}  // namespace qfx::io::detail
