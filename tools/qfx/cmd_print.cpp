// `qfx print`: the imported graph as FX code (with the module tree, as
// PyTorch's print(gm)), as IR text, or as JSON.

#include "commands.h"

#include "qfx/io/graph_json.h"
#include "qfx/io/model_file.h"

#include <nlohmann/json.hpp>

#include <iostream>

namespace qfx::cli {

void add_print_command(CLI::App& app, Action& action) {
  struct Options {
    std::string model;
    bool ir = false;
    bool json = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("print", "Print the graph of a model");
  cmd->add_option("model", options->model, "model file (TorchScript .pt or torch.export .pt2)")->required();
  auto* ir = cmd->add_flag("--ir", options->ir, "IR text form (parse_graph reads it back)");
  cmd->add_flag("--json", options->json, "JSON: {\"nodes\": [{name, op, target, args, kwargs}]}")->excludes(ir);
  cmd->callback([options, &action] {
    action = [options] {
      auto gm = io::load_model(options->model);
      if (options->json) {
        std::cout << io::graph_to_json(gm->graph()).dump(2) << "\n";
      } else if (options->ir) {
        std::cout << gm->graph().to_string() << "\n";
      } else {
        std::cout << gm->to_string() << "\n";
      }
    };
  });
}

}  // namespace qfx::cli
