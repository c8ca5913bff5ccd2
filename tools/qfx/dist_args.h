#pragma once
// The CLI's distributed options (--dist-url, --world-size, --rank,
// --dist-timeout, --workers; or torchrun's MASTER_ADDR, MASTER_PORT,
// WORLD_SIZE, RANK) and the ranks a command runs in, local workers included.

#include "qfx/dist/distributed.h"

#include <CLI/CLI.hpp>

#include <sys/types.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace qfx::cli {

struct DistArgs {
  std::string url;         ///< tcp://HOST:PORT of rank 0's store
  int64_t world_size = 0;  ///< with --dist-url
  int64_t rank = -1;       ///< with --dist-url
  double timeout_s = 300;  ///< rendezvous and every collective
  int64_t workers = 0;     ///< > 1: start this many local ranks
};

/// Adds the distributed options to `cmd`.
void add_dist_options(CLI::App& cmd, DistArgs& args);

/// The ranks a command runs in. One process unless the options or torchrun's
/// variables name a group; with `--workers N` this process is rank 0 and
/// starts ranks 1 .. N-1 as copies of itself (same arguments, the group in
/// their environment), each on its share of the cores unless
/// OMP_NUM_THREADS is set.
class Ranks {
 public:
  /// Joins the group (c10::Error when the options are inconsistent or the
  /// rendezvous fails).
  explicit Ranks(const DistArgs& args);
  /// Stops local workers still running.
  ~Ranks();
  Ranks(const Ranks&) = delete;
  Ranks& operator=(const Ranks&) = delete;

  /// The group; nullptr for one process.
  dist::ProcessGroup* group() { return group_.get(); }
  /// Rank 0 (or the only process): the one that writes outputs.
  bool writes() const { return !group_ || group_->rank() == 0; }
  /// Whether calibration or training batch `index` is this rank's.
  bool owns(int64_t index) const;
  /// Rank 0 with local workers: waits for them and passes on the warnings of
  /// those that succeeded; c10::Error with the error of the first that
  /// failed (or how it ended).
  void wait_for_workers();
  /// The one error line a failed command reports in a group: this rank's
  /// `error`, named by rank; or, on rank 0 with local workers, the error of a
  /// worker that failed by itself (the cause: rank 0 then fails at the next
  /// exchange, or hit the same error). Local workers are stopped first.
  std::string failure_of(const c10::Error& error);

 private:
  /// A local worker; what it writes to standard error goes to `errors`, an
  /// unlinked temporary file, so that a failure is reported once.
  struct Worker {
    pid_t pid;
    std::FILE* errors;
  };
  void start_workers(int port, int64_t count);
  /// Until `joined_`: a worker that ends is reported as the command's error
  /// and ends this process (rank 0 would otherwise wait for it until the
  /// rendezvous times out); runs on `watch_`.
  void watch_rendezvous();
  /// Sets `joined_` and waits for `watch_` to end.
  void end_watch();
  /// Stops the workers still running and waits for all; their files stay.
  void stop_workers();

  std::unique_ptr<dist::ProcessGroup> group_;
  std::vector<Worker> workers_;
  std::atomic<bool> joined_{false};
  std::thread watch_;
};

}  // namespace qfx::cli
