#pragma once
/// \file
/// The one writer of every file qfx makes (models, reports, JSON, HTML, value
/// files): a file appears whole or not at all, and nothing that is not a
/// regular file is ever replaced.
///
/// ```cpp
/// qfx::io::OutputOptions options;
/// options.inputs = {"model.pt"};                 // never written over ...
/// qfx::io::check_output("model_int8.pt", options);  // ... checked before the work
/// qfx::io::write_output("model_int8.pt", bytes, options);
/// ```

#include <string>
#include <string_view>
#include <vector>

namespace qfx::io {

/// What a write may replace.
struct OutputOptions {
  /// Files the same command reads: writing over one of them (by any path,
  /// symlinks and hard links included) is refused unless `force`.
  std::vector<std::string> inputs;
  /// Allows writing over an input file.
  bool force = false;
};

/// The path written for `path`: a symlink is followed to its target (which
/// may not exist yet), as `open()` would; `-` stays `-` (standard output).
/// Raises c10::Error for a symlink loop.
std::string output_target(const std::string& path);

/// Checks that `path` can be written without harm, before any work is done:
/// not empty; `-`, or a path whose target is absent or a regular file, in a
/// directory that exists, and not one of `options.inputs` unless `force`.
/// Raises c10::Error naming the path and the reason.
void check_output(const std::string& path, const OutputOptions& options = {});

/// Writes `bytes` to `path` (or to standard output for `-`): checks it as
/// check_output does, writes a temporary file in the target's directory,
/// checks every write, `fsync`s, closes and renames it over the target. On
/// any failure the temporary file is removed, an existing target is left as it
/// was, and c10::Error names the path and the cause (e.g. "No space left on
/// device"). Two processes writing the same path leave one whole file.
void write_output(const std::string& path, std::string_view bytes, const OutputOptions& options = {});

}  // namespace qfx::io
