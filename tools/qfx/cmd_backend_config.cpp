// `qfx backend-config dump NAME | check FILE.json | docs [-o FILE]`: the
// built-in BackendConfigs as JSON, validation of a BackendConfig file with
// its support table, and the generated reference docs/backends.md.

#include "commands.h"
#include "outputs.h"

#include "qfx/backend/backend_json.h"
#include "qfx/backend/backend_summary.h"
#include "qfx/backend/builtin_backends.h"
#include "qfx/io/tensor_io.h"

#include <nlohmann/json.hpp>

#include <iostream>

namespace qfx::cli {
namespace {

struct Options {
  std::string backend;
  std::string file;
  std::string output;
};

void add_dump(CLI::App& cmd, const std::shared_ptr<Options>& options, Action& action) {
  CLI::App* dump = cmd.add_subcommand("dump", "Print a built-in BackendConfig as JSON");
  dump->add_option("name", options->backend, "native, fbgemm, qnnpack, x86, onednn, executorch or tensorrt")
      ->required()
      ->check(CLI::IsMember(backend::builtin_backend_names()));
  dump->callback([options, &action] {
    action = [options] {
      std::cout << backend::backend_config_to_json(backend::get_backend_config(options->backend)).dump(2) << "\n";
    };
  });
}

void add_check(CLI::App& cmd, const std::shared_ptr<Options>& options, Action& action) {
  CLI::App* check = cmd.add_subcommand("check", "Validate a BackendConfig JSON file and print what it supports");
  check->add_option("file", options->file, "BackendConfig JSON (docs/config-format.md)")->required();
  check->callback([options, &action] {
    action = [options] {
      backend::BackendConfig config = backend::load_backend_config(options->file);
      std::cout << options->file << ": valid BackendConfig \"" << config.name() << "\", " << config.configs().size()
                << " patterns\n\n"
                << backend::support_table_markdown(config);
    };
  });
}

void add_docs(CLI::App& cmd, const std::shared_ptr<Options>& options, Action& action) {
  CLI::App* docs = cmd.add_subcommand("docs", "Write the supported-ops reference of the built-in backends (Markdown)");
  docs->add_option("-o,--output", options->output, "write here (docs/backends.md) instead of stdout")
      ->check(output_file());
  docs->callback([options, &action] {
    action = [options] {
      io::OutputOptions outputs = check_outputs({options->output}, {}, false);
      std::string text = backend::builtin_backends_markdown();
      if (options->output.empty()) {
        std::cout << text;
      } else {
        io::write_output(options->output, text, outputs);
      }
    };
  });
}

}  // namespace

void add_backend_config_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("backend-config", "BackendConfig tools");
  cmd->require_subcommand(1);
  add_dump(*cmd, options, action);
  add_check(*cmd, options, action);
  add_docs(*cmd, options, action);
}

}  // namespace qfx::cli
