// The ranks a command runs in: one process, a group named by options or
// torchrun's variables, or local workers this process starts.

#include "dist_args.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <thread>

extern char** environ;

namespace qfx::cli {
namespace {

// Set in the environment of the workers `--workers` starts.
constexpr const char* kWorkerVariable = "QFX_WORKER";
constexpr const char* kWorkerThreadsVariable = "QFX_WORKER_THREADS";

std::optional<dist::DistOptions> options_of(const DistArgs& args, bool worker) {
  TORCH_CHECK(args.workers >= 0, "--workers must not be negative, got ", args.workers);
  if (!args.url.empty()) {
    TORCH_CHECK(args.workers <= 1, "--workers starts its own group: give it or --dist-url, not both");
    TORCH_CHECK(args.world_size > 0 && args.rank >= 0, "--dist-url needs --world-size N and --rank R");
    return dist::DistOptions::from_url(args.url, args.world_size, args.rank);
  }
  TORCH_CHECK(args.world_size <= 0 && args.rank < 0, "--world-size and --rank need --dist-url tcp://HOST:PORT");
  if (auto env = dist::DistOptions::from_env()) {
    TORCH_CHECK(worker || args.workers <= 1,
                "--workers starts its own group: not under torchrun (WORLD_SIZE is set in the environment)");
    return env;
  }
  if (args.workers <= 1) return std::nullopt;
  dist::DistOptions local;
  local.port = 0;  // any free port
  local.world_size = args.workers;
  return local;
}

/// This process's arguments, as the kernel has them.
std::vector<std::string> own_arguments() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t start = 0; start < all.size();) {
    size_t end = all.find('\0', start);
    if (end == std::string::npos) end = all.size();
    args.push_back(all.substr(start, end - start));
    start = end + 1;
  }
  TORCH_CHECK(!args.empty(), "--workers: cannot read this process's arguments from /proc/self/cmdline");
  return args;
}

/// This process's environment without a group's variables, plus `extra`.
std::vector<std::string> worker_environment(const std::vector<std::string>& extra) {
  static const char* const dropped[] = {"MASTER_ADDR=", "MASTER_PORT=", "WORLD_SIZE=", "RANK=", "QFX_WORKER"};
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    auto is_dropped = [&](const char* prefix) { return entry.rfind(prefix, 0) == 0; };
    if (std::none_of(std::begin(dropped), std::end(dropped), is_dropped)) env.push_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

/// How a process ended: killed by signal `code`, or exited with status `code`.
std::string ending(bool killed, int code) {
  if (killed) return std::string("was killed by signal ") + strsignal(code);
  return "exited with status " + std::to_string(code);
}

std::string exit_of(int status) {
  return WIFSIGNALED(status) ? ending(true, WTERMSIG(status)) : ending(false, WEXITSTATUS(status));
}

/// All that `file` holds, read from its start.
std::string text_of(std::FILE* file) {
  std::string text;
  std::rewind(file);
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) text.append(buffer, n);
  return text;
}

/// The message of the last `qfx: error:` line in `text`; empty if none.
std::string last_error_line(const std::string& text) {
  const std::string prefix = "qfx: error: ";
  std::string found;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) == 0) found = line.substr(prefix.size());
  }
  return found;
}

}  // namespace

void add_dist_options(CLI::App& cmd, DistArgs& args) {
  cmd.add_option("--workers", args.workers,
                 "calibrate (or --train) in N local processes, each on a share of the batches and of the cores");
  cmd.add_option("--dist-url", args.url,
                 "join a group of processes on several machines: tcp://HOST:PORT of rank 0 (also from torchrun's "
                 "MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK)");
  cmd.add_option("--world-size", args.world_size, "with --dist-url: the number of ranks");
  cmd.add_option("--rank", args.rank, "with --dist-url: this process's rank (0 writes the outputs)");
  cmd.add_option("--dist-timeout", args.timeout_s,
                 "seconds to wait for the other ranks to join and at every exchange (default: 300)");
}

Ranks::Ranks(const DistArgs& args) {
  const bool worker = std::getenv(kWorkerVariable) != nullptr;
  std::optional<dist::DistOptions> options = options_of(args, worker);
  if (!options) return;
  TORCH_CHECK(std::isfinite(args.timeout_s) && args.timeout_s > 0 && args.timeout_s <= 86400,
              "--dist-timeout must be in (0, 86400] seconds, got ", args.timeout_s);
  options->timeout = std::chrono::milliseconds(static_cast<int64_t>(args.timeout_s * 1000));
  if (const char* threads = std::getenv(kWorkerThreadsVariable); worker && threads != nullptr) {
    at::set_num_threads(std::max(1, std::atoi(threads)));
  }
  const bool starts_workers = !worker && args.workers > 1;
  if (starts_workers && std::getenv("OMP_NUM_THREADS") == nullptr) {
    at::set_num_threads(std::max<int>(1, at::get_num_threads() / static_cast<int>(args.workers)));
  }
  try {
    group_ = std::make_unique<dist::ProcessGroup>(*options, [&](int port) {
      if (!starts_workers) return;
      start_workers(port, args.workers);
      watch_ = std::thread([this] { watch_rendezvous(); });
    });
  } catch (...) {
    end_watch();
    stop_workers();
    throw;
  }
  end_watch();
}

void Ranks::end_watch() {
  joined_ = true;
  if (watch_.joinable()) watch_.join();
}

void Ranks::watch_rendezvous() {
  while (!joined_) {
    for (size_t i = 0; i < workers_.size(); ++i) {
      siginfo_t info{};
      if (waitid(P_PID, workers_[i].pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) continue;
      std::string line = last_error_line(text_of(workers_[i].errors));
      if (line.empty()) {
        line = "--workers: rank " + std::to_string(i + 1) + " " + ending(info.si_code != CLD_EXITED, info.si_status) +
               " before the ranks joined";
      }
      for (const Worker& worker : workers_) kill(worker.pid, SIGTERM);
      std::cerr << "qfx: error: " << line << "; no output written" << std::endl;
      _exit(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Ranks::~Ranks() {
  stop_workers();
  for (const Worker& worker : workers_) std::fclose(worker.errors);
}

void Ranks::stop_workers() {
  for (Worker& worker : workers_) {
    if (worker.pid > 0) kill(worker.pid, SIGTERM);
  }
  for (Worker& worker : workers_) {
    if (worker.pid > 0) waitpid(worker.pid, nullptr, 0);
    worker.pid = 0;
  }
}

bool Ranks::owns(int64_t index) const {
  return !group_ || dist::owns_batch(index, group_->rank(), group_->world_size());
}

void Ranks::start_workers(int port, int64_t count) {
  std::vector<std::string> args = own_arguments();
  std::vector<char*> argv = pointers_to(args);
  for (int64_t rank = 1; rank < count; ++rank) {
    std::vector<std::string> env = worker_environment(
        {"MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port), "WORLD_SIZE=" + std::to_string(count),
         "RANK=" + std::to_string(rank), std::string(kWorkerVariable) + "=1",
         std::string(kWorkerThreadsVariable) + "=" + std::to_string(at::get_num_threads())});
    std::vector<char*> envp = pointers_to(env);
    std::FILE* errors = std::tmpfile();
    TORCH_CHECK(errors != nullptr, "--workers: cannot start rank ", rank,
                ": no temporary file for its errors: ", std::strerror(errno));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fileno(errors), STDERR_FILENO);
    pid_t pid = 0;
    const int error = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (error != 0) std::fclose(errors);
    TORCH_CHECK(error == 0, "--workers: cannot start rank ", rank, ": ", std::strerror(error));
    workers_.push_back({pid, errors});
  }
}

void Ranks::wait_for_workers() {
  std::string failed;
  for (size_t i = 0; i < workers_.size(); ++i) {
    int status = 0;
    waitpid(workers_[i].pid, &status, 0);
    workers_[i].pid = 0;
    const std::string text = text_of(workers_[i].errors);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      std::cerr << text;  // its warnings
    } else if (failed.empty()) {
      failed = last_error_line(text);
      if (failed.empty()) failed = "--workers: rank " + std::to_string(i + 1) + " " + exit_of(status);
    }
  }
  TORCH_CHECK(failed.empty(), failed, "; no output written");
}

std::string Ranks::failure_of(const c10::Error& error) {
  stop_workers();
  for (const Worker& worker : workers_) {
    if (std::string line = last_error_line(text_of(worker.errors)); !line.empty()) return line;
  }
  return "rank " + std::to_string(group_ ? group_->rank() : 0) + ": " + error.what_without_backtrace();
}

}  // namespace qfx::cli
