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

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace qfx::io {

class OutputBatch;

/// What a write may replace.
struct OutputOptions {
  /// Files the same command reads: writing over one of them (by any path,
  /// symlinks and hard links included) is refused unless `force`.
  std::vector<std::string> inputs;
  /// Allows writing over an input file.
  bool force = false;
  /// When set, write_output stages each output in this batch, which writes
  /// them all or none (OutputBatch).
  OutputBatch* batch = nullptr;
};

/// The path written for `path`: a symlink is followed to its target (which
/// may not exist yet), as `open()` would; `-` stays `-` (standard output).
/// Raises c10::Error for a symlink loop.
std::string output_target(const std::string& path);

/// Checks that `path` can be written without harm, before any work is done:
/// not empty; `-`, a stream (a pipe, terminal or character device such as
/// `/dev/stdout`, written in place as `-` is), or a path whose target is
/// absent or a regular file, in a directory that exists, and not one of
/// `options.inputs` unless `force`. Raises c10::Error naming the path and the
/// reason.
void check_output(const std::string& path, const OutputOptions& options = {});

/// Writes `bytes` to `path` (or to standard output for `-`, or in place to
/// a stream): checks it as check_output does, writes a temporary file in the
/// target's directory, checks every write, `fsync`s, closes and renames it
/// over the target. On any failure the temporary file is removed, an existing
/// target is left as it was, and c10::Error names the path and the cause
/// (e.g. "No space left on device"). Two processes writing the same path
/// leave one whole file. With `options.batch`, the output is staged there.
void write_output(const std::string& path, std::string_view bytes, const OutputOptions& options = {});

/// The outputs of one command, all or nothing: each output is staged whole
/// (a synced temporary file beside its target; a stream's bytes in memory)
/// and commit() writes the streams, then renames every file over its target,
/// putting back the targets it replaced if a rename fails. A batch destroyed
/// without commit() removes what it staged, so a command that fails after
/// its first output (a report on a full disk) leaves every target as it was.
/// \code
///   qfx::io::OutputBatch batch;
///   options.batch = &batch;
///   qfx::io::write_output("model_int8.pt", model, options);
///   qfx::io::write_output("report.json", report, options);  // fails: model_int8.pt is untouched
///   batch.commit();
/// \endcode
class OutputBatch {
 public:
  OutputBatch();
  ~OutputBatch();
  OutputBatch(const OutputBatch&) = delete;
  OutputBatch& operator=(const OutputBatch&) = delete;

  /// Stages `bytes` for `path`, checked as write_output checks it.
  void stage(const std::string& path, std::string_view bytes, const OutputOptions& options);
  /// Writes every staged output; c10::Error naming the output that failed.
  void commit();
  /// The bytes staged for `path` so far, or -1 when none are.
  int64_t staged_size(const std::string& path) const;

 private:
  struct Staged;
  std::vector<std::unique_ptr<Staged>> staged_;
};

}  // namespace qfx::io
