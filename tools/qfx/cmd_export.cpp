// `qfx export MODEL.pt -o OUT.onnx`: a TorchScript model as ONNX, without
// quantizing it: a float model as float ONNX, a reference model (written by
// `qfx quantize --reference`) with its QuantizeLinear/DequantizeLinear pairs
// and the float weights it stores.

#include "commands.h"
#include "data_args.h"
#include "onnx_args.h"
#include "outputs.h"

#include "qfx/io/onnx_export.h"
#include "qfx/io/model_file.h"

#include <c10/core/InferenceMode.h>

namespace qfx::cli {

void add_export_command(CLI::App& app, Action& action) {
  struct Options {
    std::string model, output, data;
    DataArgs data_args;
    OnnxArgs onnx;
    bool force = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("export", "Export a model (float or reference quantized) as ONNX");
  cmd->add_option("model", o->model, "model file (TorchScript .pt or torch.export .pt2)")->required();
  cmd->add_option("-o,--output", o->output, "the ONNX model to write (- for standard output)")
      ->required()
      ->check(output_file());
  cmd->add_option("--data", o->data, "data whose first batch is the example input (instead of --input-shape)");
  add_data_options(*cmd, o->data_args, "items in the example batch (default: 8)");
  add_onnx_options(*cmd, o->onnx);
  add_force_flag(*cmd, o->force);
  cmd->callback([o, &action] {
    action = [o] {
      TORCH_CHECK(o->onnx.format.empty() || o->onnx.format == "onnx", "qfx export writes ONNX only (--format onnx)");
      std::vector<c10::IValue> example = example_inputs(o->onnx, o->data, o->data_args.resolved());
      io::OutputOptions outputs = check_outputs({o->output}, {o->model, o->data}, o->force);
      c10::InferenceMode no_autograd;
      auto gm = io::load_model(o->model);
      io::export_onnx(*gm, example, o->output, o->onnx.options, outputs);
    };
  });
}

}  // namespace qfx::cli
