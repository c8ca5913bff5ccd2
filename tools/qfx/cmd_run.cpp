// `qfx run`: imports a model and runs it in the qfx interpreter on inputs
// saved with Python's torch.save; writes the output for torch.load, or prints
// a summary of it.

#include "commands.h"
#include "outputs.h"

#include "qfx/io/tensor_io.h"
#include "qfx/io/model_file.h"
#include "qfx/ir/interpreter.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <iostream>

namespace qfx::cli {
namespace {

void print_summary(const c10::IValue& value, const std::string& label) {
  if (value.isTensor()) {
    const at::Tensor& t = value.toTensor();
    std::cout << label << ": Tensor" << t.sizes() << " " << t.scalar_type();
    if (t.is_floating_point() && t.numel() > 0) {
      std::cout << " min=" << t.min().item<double>() << " max=" << t.max().item<double>()
                << " mean=" << t.mean().item<double>();
    }
    std::cout << "\n";
  } else if (value.isTuple() || value.isList()) {
    auto items = value.isTuple() ? value.toTupleRef().elements().vec() : value.toListRef().vec();
    for (size_t i = 0; i < items.size(); ++i) print_summary(items[i], label + "[" + std::to_string(i) + "]");
  } else {
    std::cout << label << ": " << value << "\n";
  }
}

}  // namespace

void add_run_command(CLI::App& app, Action& action) {
  struct Options {
    std::string model;
    std::string input;
    std::string output;
    bool force = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("run", "Run a model in the qfx interpreter");
  cmd->add_option("model", options->model, "model file (TorchScript .pt or torch.export .pt2)")->required();
  cmd->add_option("--input", options->input,
                  "inputs saved with torch.save: a tensor, or a list/tuple of tensors (one per input)")
      ->required();
  cmd->add_option("-o,--output", options->output, "write the output here (torch.load reads it; - for standard output)")
      ->check(output_file());
  add_force_flag(*cmd, options->force);
  cmd->callback([options, &action] {
    action = [options] {
      c10::InferenceMode no_autograd;
      io::OutputOptions outputs = check_outputs({options->output}, {options->model, options->input}, options->force);
      auto gm = io::load_model(options->model);
      auto inputs = io::as_inputs(io::load_value(options->input), "'" + options->input + "'");
      ir::Interpreter interpreter(*gm);
      c10::IValue output;
      try {
        output = interpreter.run(std::move(inputs));
      } catch (const c10::Error& e) {
        TORCH_CHECK(false, "running '", options->model, "' on '", options->input, "': ", e.what_without_backtrace());
      }
      if (options->output.empty()) {
        print_summary(output, "output");
      } else {
        io::save_value(output, options->output, outputs);
      }
    };
  });
}

}  // namespace qfx::cli
