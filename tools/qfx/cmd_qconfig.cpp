// `qfx qconfig dump BACKEND [--qat]`: PyTorch's default QConfigMapping for a
// backend, as JSON (docs/config-format.md).

#include "commands.h"

#include "qfx/quant/qconfig_json.h"

#include <c10/util/Exception.h>
#include <nlohmann/json.hpp>

#include <iostream>

namespace qfx::cli {

void add_qconfig_command(CLI::App& app, Action& action) {
  struct Options {
    std::string backend;
    bool qat = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("qconfig", "QConfig tools");
  cmd->require_subcommand(1);
  CLI::App* dump = cmd->add_subcommand("dump", "Print the default QConfigMapping of a backend as JSON");
  dump->add_option("backend", options->backend, "fbgemm, x86, qnnpack or onednn")
      ->required()
      ->check(CLI::IsMember({"fbgemm", "x86", "qnnpack", "onednn"}));
  dump->add_flag("--qat", options->qat, "the QAT mapping (get_default_qat_qconfig_mapping)");
  dump->callback([options, &action] {
    action = [options] {
      auto mapping = options->qat ? quant::get_default_qat_qconfig_mapping(options->backend)
                                  : quant::get_default_qconfig_mapping(options->backend);
      std::cout << quant::qconfig_mapping_to_json(mapping).dump(2) << "\n";
    };
  });
}

}  // namespace qfx::cli
