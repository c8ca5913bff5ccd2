#pragma once
// The files a CLI command writes, checked before the command does any work:
// each can be written (io::check_output), none is an input of the command
// (unless --force), no two name the same file, and `-` (standard output) is
// taken at most once and only when the command prints nothing else there.

#include "qfx/io/output_file.h"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace qfx::cli {

/// The validator of every output option: a file name is not empty (`-o ""`
/// is a usage error).
const CLI::Validator& output_file();

/// `--force`: allow an output to overwrite an input file of the command.
void add_force_flag(CLI::App& cmd, bool& force);

/// Checks `outputs` (empty strings: not asked for) against each other and
/// against `inputs`; `prints` says the command writes its own text to
/// standard output. Returns the options every write of the command passes to
/// io::write_output. c10::Error naming the output and the reason.
io::OutputOptions check_outputs(const std::vector<std::string>& outputs, std::vector<std::string> inputs, bool force,
                                bool prints = false);

}  // namespace qfx::cli
