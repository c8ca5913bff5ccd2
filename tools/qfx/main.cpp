// qfx: the command-line driver. Parses the subcommand, runs it, and turns any
// error into one line on stderr and a non-zero exit: 2 for usage errors, 1 for
// everything else.

#include "commands.h"

#include "qfx/runtime.h"

#include <c10/util/Exception.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <pthread.h>
#include <iostream>

namespace {

std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::string out;
  for (char c : text) {
    if (c == '\n') {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

/// Library warnings (TORCH_WARN) as `qfx: warning: ...` lines.
class CliWarnings : public c10::WarningHandler {
 public:
  void process(const c10::SourceLocation& /*where*/, const std::string& msg, const bool /*verbatim*/) override {
    std::cerr << "qfx: warning: " << one_line(msg) << "\n";
  }
};

int fail(const std::string& message, int code) {
  std::cerr << "qfx: error: " << one_line(message) << "\n";
  return code;
}

/// A command's text on standard output counts as an output: a full disk or a
/// closed pipe there is an error, not exit 0. `error` is errno at the failure.
int stdout_failed(int error) {
  std::cout.exceptions(std::ios::goodbit);  // the flush at exit fails again, quietly
  return fail(std::string("cannot write to standard output: ") + (error ? std::strerror(error) : "write failed"), 1);
}

/// Stack of the thread that runs a command. torch::jit's passes recurse once
/// per graph node (about 3 KB each): the 8 MB main stack overflows at about
/// 2,700 nodes. Pages are reserved, and used only as deep as a run goes.
constexpr size_t kCommandStack = size_t{1} << 30;

/// Runs `body` on a thread with a kCommandStack stack, or here if no such
/// thread can be made.
int run_on_large_stack(const std::function<int()>& body) {
  struct Call {
    const std::function<int()>* body;
    int result;
  } call{&body, 1};
  pthread_attr_t attr;
  pthread_t thread;
  bool started = pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, kCommandStack) == 0 &&
                 pthread_create(
                     &thread, &attr,
                     [](void* arg) -> void* {
                       auto* c = static_cast<Call*>(arg);
                       c->result = (*c->body)();
                       return nullptr;
                     },
                     &call) == 0;
  pthread_attr_destroy(&attr);
  if (!started) return body();
  pthread_join(thread, nullptr);
  return call.result;
}

int run_command(int argc, char** argv) {
  static CliWarnings warnings;
  c10::Warning::set_warning_handler(&warnings);
  qfx::reuse_freed_memory();  // batch after batch; glibc builds only, tcmalloc keeps freed memory itself
  CLI::App app{"qfx: FX graph mode quantization for C++"};
  app.require_subcommand(1);
  qfx::cli::Action action;
  qfx::cli::add_print_command(app, action);
  qfx::cli::add_run_command(app, action);
  qfx::cli::add_qconfig_command(app, action);
  qfx::cli::add_observe_command(app, action);
  qfx::cli::add_backend_config_command(app, action);
  qfx::cli::add_opt_command(app, action);
  qfx::cli::add_quantize_command(app, action);
  qfx::cli::add_sensitivity_command(app, action);
  qfx::cli::add_eval_command(app, action);
  qfx::cli::add_compare_command(app, action);
  qfx::cli::add_report_command(app, action);
  qfx::cli::add_export_command(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    return fail(std::string(e.what()) + " (see qfx --help)", 2);
  }
  std::cout.exceptions(std::ios::badbit);  // a failed write throws, with errno still telling why
  try {
    action();
    std::cout.flush();
  } catch (const std::ios_base::failure&) {
    return stdout_failed(errno);
  } catch (const c10::Error& e) {
    return fail(e.what_without_backtrace(), 1);
  } catch (const std::exception& e) {
    return fail(e.what(), 1);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return run_on_large_stack([&] { return run_command(argc, argv); });
}
