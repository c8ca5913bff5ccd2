#pragma once
// The CLI's data options (--batch-size, --mean, --std, --seed, --resize,
// --crop) shared by `qfx quantize --calib` and `qfx eval --data`.

#include "qfx/io/data_source.h"

#include <CLI/CLI.hpp>

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

/// Adds the data options to `cmd`; `batch_help` describes --batch-size.
void add_data_options(CLI::App& cmd, DataArgs& args, const std::string& batch_help);

}  // namespace qfx::cli
