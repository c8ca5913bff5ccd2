#pragma once
// The CLI's data options (--batch-size, --mean, --std, --seed, --resize,
// --crop) and batch loop, shared by calibration, training, eval and compare.

#include "qfx/io/data_source.h"
#include "qfx/accuracy/sensitivity.h"

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace qfx::cli {

struct DataArgs {
  io::DataOptions options;
  int64_t seed = -1;  // -1: file order
  /// The options with the seed applied.
  io::DataOptions resolved() const;
};

/// c10::Error "<what> batch <index> holds NaN or infinite values" when a
/// floating-point input of `batch` does.
void check_finite(const io::Batch& batch, const std::string& what, int64_t index);

/// Runs `fn(batch, index)` on every batch of `source`: its inputs checked
/// finite first, an error inside `fn` re-raised as "<what> batch <index>:
/// <cause>", progress on stderr under `label` (none when `quiet`). Returns
/// the number of batches; c10::Error "<what> holds no batches" when empty.
/// With `wanted`, a batch whose index it refuses is skipped unread
/// (DataSource::skip) and counted.
int64_t for_each_batch(io::DataSource& source, const std::string& what, const std::string& label, bool quiet,
                       const std::function<void(const io::Batch&, int64_t)>& fn,
                       const std::function<bool(int64_t)>& wanted = {});

/// Runs `fn` on each batch of the calibration data `path` (the options of
/// `args`, seed included; at most `max_batches`, 0: all) that `wanted`
/// accepts, as for_each_batch; errors opening it read "calibration data:
/// <cause>".
void for_each_calibration_batch(const std::string& path, const DataArgs& args, int64_t max_batches,
                                const std::string& label, bool quiet, const std::function<void(const io::Batch&)>& fn,
                                const std::function<bool(int64_t)>& wanted = {});

/// Items per batch of the data trials are scored on (qfx sensitivity,
/// --max-drop): small batches keep a pass's activations in cache.
inline constexpr int64_t kTrialBatchSize = 32;

/// The batches of `path` held in memory, in file order (no shuffling),
/// `batch_size` items each, at most `max_batches` of them (0: all), with the
/// normalization of `args`; checked as for_each_batch checks them.
std::vector<LabelledBatch> load_batches(const std::string& path, const DataArgs& args, int64_t batch_size,
                                        int64_t max_batches, const std::string& what, bool quiet);

/// Adds the data options to `cmd`; `batch_help` describes --batch-size.
void add_data_options(CLI::App& cmd, DataArgs& args, const std::string& batch_help);

}  // namespace qfx::cli
