#pragma once
/// \file
/// Calibration across processes: a process group (c10d's TCPStore for the
/// rendezvous, ProcessGroupGloo for collectives) and the merge of observer
/// statistics, so that N ranks that each observed a disjoint shard of the
/// calibration batches end with the statistics one process would have.
///
/// \code
///   dist::ProcessGroup group(dist::DistOptions::from_url("tcp://10.0.0.1:29500", 2, rank));
///   // ... each rank runs the prepared model on its own batches ...
///   dist::merge_observers(prepared, group);  // every rank now holds the merged statistics
/// \endcode

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qfx::ir {
class GraphModule;
}
namespace qfx::quant {
class ActivationPostProcess;
}
namespace torch::nn {
class Module;
}

namespace qfx::dist {

/// Where the ranks meet and which one this process is, as torchrun names it.
struct DistOptions {
  std::string host = "127.0.0.1";            ///< MASTER_ADDR: rank 0 hosts the store there
  int port = 29500;                          ///< MASTER_PORT; 0 on rank 0: any free port (see ProcessGroup::port)
  int64_t world_size = 1;                    ///< WORLD_SIZE
  int64_t rank = 0;                          ///< RANK
  std::chrono::milliseconds timeout{60000};  ///< rendezvous and every collective

  /// From `tcp://HOST:PORT`; c10::Error naming the URL when it is malformed,
  /// or when world_size < 1 or rank is not in [0, world_size).
  static DistOptions from_url(const std::string& url, int64_t world_size, int64_t rank);
  /// From MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK; nullopt when
  /// WORLD_SIZE is not set; c10::Error naming the variable that is missing or
  /// not a number.
  static std::optional<DistOptions> from_env();
};

/// A group of processes with collectives over TCP (Gloo).
class ProcessGroup {
 public:
  /// Joins the group: rank 0 starts the store, then `store_ready(port)` is
  /// called on it (where local workers can be started), then every rank
  /// waits for the others. c10::Error when the store cannot be started or
  /// reached, or a rank does not join within the timeout.
  explicit ProcessGroup(const DistOptions& options, const std::function<void(int port)>& store_ready = {});
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int64_t rank() const;
  int64_t world_size() const;
  /// The store's port (the one chosen when DistOptions::port was 0).
  int port() const;

  enum class Reduce { kSum, kMin, kMax };
  /// Reduces a contiguous CPU tensor over all ranks, in place: every rank
  /// gets the result. c10::Error when a rank fails or the timeout passes.
  void all_reduce(at::Tensor& tensor, Reduce op);
  /// Returns when every rank has called it.
  void barrier();
  /// Every rank's `mine` (same shape on every rank) stacked in rank order:
  /// shape [world_size, ...].
  at::Tensor all_gather(const at::Tensor& mine);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Merges the statistics of every observer of a calibrated prepared model
/// across the group; afterwards each rank holds the same statistics.
///   - MinMaxObserver, PerChannelMinMaxObserver: min of min_val, max of
///     max_val — exactly the statistics of one process on all batches.
///   - MovingAverage(PerChannel)MinMaxObserver: the mean over the ranks that
///     observed anything of their moving averages (an average of averages:
///     close to, not equal to, one process's).
///   - HistogramObserver and qfx's Percentile, Entropy and MSE observers:
///     the ranks' histograms on the union of their ranges
///     (quant::detail::merge_histograms: exact when every rank's range is
///     the union; otherwise each rank's counts spread evenly inside its
///     bins), independent of the ranks' order.
///   - FakeQuantize, FusedMovingAvgObsFakeQuantize: their observer's rule,
///     then scale and zero_point from the merged statistics.
///   - Placeholder, FixedQParams, Noop, ReuseInput observers: no statistics.
/// Every rank must call it with the same model. c10::Error naming the
/// observer for any other kind (see check_mergeable).
void merge_observers(ir::GraphModule& gm, ProcessGroup& group);

/// merge_observers' rule for one observer (or fake-quantize module); every
/// rank calls it for the same observer. Observers without statistics are
/// left as they are.
void merge_observer(quant::ActivationPostProcess& observer, ProcessGroup& group);

/// Distributed QAT, after each optimizer step: the min/max statistics of
/// every fake-quantize module of `module` (activations and weights) set to
/// their min and max over the ranks, then scale and zero_point from them.
/// With moving averages this is the update one process makes on the ranks'
/// batches taken together (the average is monotone in the batch's min and
/// max); each rank still fake-quantized its own step with its own update.
void sync_fake_quantize(torch::nn::Module& module, ProcessGroup& group);

/// Distributed QAT, after backward: every gradient replaced by its mean over
/// the ranks (DistributedDataParallel's rule), in one all-reduce. Parameters
/// without a gradient on this rank count as zero gradients.
void average_gradients(const std::vector<at::Tensor>& parameters, ProcessGroup& group);

/// c10::Error naming the first observer of `gm` that merge_observers cannot
/// merge: call before calibrating.
void check_mergeable(const ir::GraphModule& gm);

/// Whether calibration batch `index` (0, 1, ...) is this rank's: every
/// world_size-th batch from the rank's own index.
inline bool owns_batch(int64_t index, int64_t rank, int64_t world_size) { return index % world_size == rank; }

}  // namespace qfx::dist
