// check_load_does_not_crash: a trial load in a forked child.

#include "crash_guard.h"

#include <c10/util/Exception.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <string>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace qfx::io::detail {
namespace {

/// The child's exit codes; any other end is a crash (a sanitizer's report
/// exits with 1 rather than dying of the signal).
constexpr int kLoaded = 0, kThrew = 3;

/// In the child: no output (the parent's own load reports), kLoaded when
/// `load` returns, kThrew when it throws (its message built, as the parent
/// will). _exit: no atexit handlers, no flushing of the parent's buffers a
/// second time.
[[noreturn]] void run_child(const std::function<void()>& load) {
  int null = open("/dev/null", O_WRONLY);
  if (null >= 0) {
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
  }
  int code = kLoaded;
  try {
    load();
  } catch (const std::exception& e) {
    (void)e.what();  // the parent reads it: a compile error's what() may unpickle debug info and abort
    code = kThrew;
  } catch (...) {
    code = kThrew;
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
  if (WIFEXITED(status) && (WEXITSTATUS(status) == kLoaded || WEXITSTATUS(status) == kThrew)) return;
  std::string how = WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exit " + std::to_string(WEXITSTATUS(status));
  TORCH_CHECK(false, what, ": LibTorch crashed (", how, ") loading it: the archive's code or pickles are corrupt");
}

}  // namespace qfx::io::detail
