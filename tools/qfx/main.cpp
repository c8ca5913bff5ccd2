// qfx: the command-line driver. Parses the subcommand, runs it on a thread
// with a large stack, and turns any error into one printable line on stderr
// and a non-zero exit: 2 for usage errors, 1 for everything else.

#include "commands.h"
#include "config_args.h"

#include "qfx/ir/kernel_workarounds.h"
#include "qfx/runtime.h"

#include <c10/util/Exception.h>

#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>

namespace {

/// Longest message line qfx prints; the rest is cut, with its length.
constexpr size_t kMaxLine = 2000;

/// Bytes of the UTF-8 sequence at `at` (1 to 4), or 0 if it is not one.
size_t utf8_length(const std::string& s, size_t at) {
  const auto lead = static_cast<unsigned char>(s[at]);
  const size_t n = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xe ? 3 : (lead >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || at + n > s.size()) return 0;
  for (size_t i = 1; i < n; ++i) {
    if ((static_cast<unsigned char>(s[at + i]) >> 6) != 0x2) return 0;
  }
  return n;
}

/// `text` as one printable line: newlines as spaces; control characters and
/// bytes that are not UTF-8 (a corrupt file's bytes in a library message) as
/// one `?` a run; caffe2's `[enforce fail at FILE:LINE] . ` prefix dropped;
/// cut at kMaxLine.
std::string one_line(const std::string& text) {
  std::string out;
  for (size_t at = 0; at < text.size();) {
    if (text.compare(at, 17, "[enforce fail at ") == 0 && text.find("] . ", at) != std::string::npos) {
      at = text.find("] . ", at) + 4;
      continue;
    }
    const size_t n = utf8_length(text, at);
    const auto c = static_cast<unsigned char>(text[at]);
    if (c == '\n' || c == '\t') {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else if (n == 0 || c < 0x20 || c == 0x7f) {
      if (out.empty() || out.back() != '?') out += '?';
    } else {
      out.append(text, at, n);
    }
    at += std::max<size_t>(n, 1);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.size() > kMaxLine) {
    size_t cut = kMaxLine;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) >> 6) == 0x2) --cut;  // not inside a character
    out = out.substr(0, cut) + "... (" + std::to_string(out.size()) + " characters)";
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

/// CLI11 2.1 reads integers with strtoll and no range check (a value of
/// 99999999999999999999 became 2^63 - 1): every integer option of `app` and
/// its subcommands first checks that its value fits.
void check_integer_ranges(CLI::App& app) {
  CLI::Validator fits(
      [](std::string& value) {
        errno = 0;
        char* end = nullptr;
        std::strtoll(value.c_str(), &end, 0);
        return errno == ERANGE ? "'" + value + "' is out of the range of a 64-bit integer" : std::string();
      },
      "");
  for (CLI::Option* option : app.get_options()) {
    if (option->get_type_name().rfind("INT", 0) == 0) option->check(fits);
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) check_integer_ranges(*sub);
}

/// Stack of the thread that runs a command. torch::jit's passes recurse once
/// per graph node (about 1.5 KB each): the 8 MB main stack overflowed on a
/// chain of 10,000 nodes. Pages are reserved, and used only as deep as a run
/// goes.
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
  app.fallthrough();  // the app's options (--kernel-workarounds) may follow the command
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
  std::string workarounds = "on";
  app.add_option("--kernel-workarounds", workarounds,
                 "on (default) or off: whether qfx works around LibTorch's wrong quantized kernels "
                 "(docs/divergences.md); off shows what the kernels compute")
      ->check(CLI::IsMember({"on", "off"}));
  check_integer_ranges(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    return fail(std::string(e.what()) + " (see qfx --help)", 2);
  }
  qfx::ir::set_kernel_workarounds(workarounds == "on");
  std::cout.exceptions(std::ios::badbit);  // a failed write throws, with errno still telling why
  try {
    action();
    std::cout.flush();
    if (std::string note = qfx::cli::saturation_warning(); !note.empty()) TORCH_WARN(note);
  } catch (const std::ios_base::failure& e) {
    if (!std::cout.bad()) return fail(e.what(), 1);  // a stream of the command's own, not standard output
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
