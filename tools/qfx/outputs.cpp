// Checking a command's outputs up front, so that a mistyped -o never costs a
// whole calibration before it fails, and never replaces an input.

#include "outputs.h"

#include <c10/util/Exception.h>

#include <filesystem>

#include <sys/stat.h>
#include <unistd.h>

namespace qfx::cli {

namespace {

/// True when `path` is this process's standard output (`/dev/stdout`, or
/// the terminal or pipe it writes to).
bool is_standard_output(const std::string& path) {
  struct stat named {
  }, out{};
  return path == "-" || (::stat(path.c_str(), &named) == 0 && ::fstat(STDOUT_FILENO, &out) == 0 &&
                         named.st_dev == out.st_dev && named.st_ino == out.st_ino);
}

/// The file an output names, for telling two outputs apart.
std::string identity(const std::string& path) {
  if (is_standard_output(path)) return "-";
  std::error_code error;
  std::filesystem::path target = std::filesystem::weakly_canonical(io::output_target(path), error);
  return error ? path : target.string();
}

}  // namespace

const CLI::Validator& output_file() {
  static const CLI::Validator validator(
      [](std::string& path) { return path.empty() ? std::string("an output file name cannot be empty") : ""; }, "FILE");
  return validator;
}

void add_force_flag(CLI::App& cmd, bool& force) {
  cmd.add_flag("--force", force, "allow an output file to overwrite an input file of this command");
}

io::OutputOptions check_outputs(const std::vector<std::string>& outputs, std::vector<std::string> inputs, bool force,
                                bool prints) {
  io::OutputOptions options{std::move(inputs), force};
  std::vector<std::string> seen;
  for (const std::string& output : outputs) {
    if (output.empty()) continue;
    TORCH_CHECK(!is_standard_output(output) || !prints, "cannot write '", output,
                "': standard output carries this command's own text");
    io::check_output(output, options);
    std::string id = identity(output);
    for (const std::string& other : seen) {
      TORCH_CHECK(other != id, "cannot write '", output, "' twice: two outputs of this command name the same file");
    }
    seen.push_back(id);
  }
  return options;
}

}  // namespace qfx::cli
