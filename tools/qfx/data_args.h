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

/// Adds the data options to `cmd`; `batch_help` describes --batch-size.
void add_data_options(CLI::App& cmd, DataArgs& args, const std::string& batch_help);

}  // namespace qfx::cli
