// `qfx opt MODEL.pt --passes fuse,insert-observers,... [--print-after-all]
// [--time-passes]`: runs any pipeline of registered passes on an imported
// model and prints the resulting graph (IR text, or the FX code with --code);
// --time-passes prints each pass's wall time on stderr.

#include "commands.h"
#include "config_args.h"

#include "qfx/io/model_file.h"
#include "qfx/ir/graph_module.h"
#include "qfx/passes/pass_manager.h"

#include <iostream>

namespace qfx::cli {
namespace {

struct Options {
  std::string model;
  std::string passes;
  std::string backend = "native";
  std::string qconfig = "default:onednn";
  bool qat = false;
  bool print_after_all = false;
  bool code = false;
  bool explain = false;
  bool time_passes = false;
};

std::string pass_names() {
  std::string names;
  for (const passes::PassInfo& info : passes::pass_registry()) {
    names += std::string("\n  ") + info.name + ": " + info.summary;
  }
  return names;
}

void run(const Options& o) {
  passes::PassManager manager;
  manager.add_list(o.passes);
  if (o.print_after_all) manager.print_after_all(std::cout);
  std::vector<passes::PassTime> times;
  if (o.time_passes) manager.time_passes(times);
  passes::PassOptions pass_options;
  pass_options.backend_config = std::make_shared<backend::BackendConfig>(backend_from_arg(o.backend));
  pass_options.qconfig_mapping = std::make_shared<quant::QConfigMapping>(qconfig_mapping_from_arg(o.qconfig));
  pass_options.is_qat = o.qat;
  if (o.explain) pass_options.explain = &std::cerr;
  auto gm = io::load_model(o.model);
  if (o.qat) gm->root().train(true);
  manager.run(*gm, pass_options);
  if (o.time_passes) passes::print_pass_times(std::cerr, times);
  if (o.print_after_all) return;
  std::cout << (o.code ? gm->to_string() : gm->graph().to_string()) << "\n";
}

}  // namespace

void add_opt_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("opt", "Run a pipeline of passes on a model and print the graph");
  cmd->footer("Passes:" + pass_names());
  cmd->add_option("model", o->model, "model file (TorchScript .pt or torch.export .pt2)")->required();
  cmd->add_option("--passes", o->passes, "comma-separated pass names, run in order")->required();
  cmd->add_option("--backend", o->backend, "built-in BackendConfig name or JSON file (default: native)");
  cmd->add_option("--qconfig", o->qconfig,
                  "QConfigMapping: default:ENGINE, qat:ENGINE or a JSON file (default: default:onednn)");
  cmd->add_flag("--qat", o->qat, "QAT mode: the model in training mode, fusions keep batch norms");
  cmd->add_flag("--print-after-all", o->print_after_all, "print the graph after every pass");
  cmd->add_flag("--code", o->code, "print the module tree and FX code instead of IR text");
  cmd->add_flag("--time-passes", o->time_passes, "print each pass's wall time (and its lint's) on stderr");
  cmd->add_flag("--explain", o->explain, "say on stderr why candidates were not rewritten");
  cmd->callback([o, &action] { action = [o] { run(*o); }; });
}

}  // namespace qfx::cli
