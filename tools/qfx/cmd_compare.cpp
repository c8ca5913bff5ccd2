// `qfx compare FLOAT.pt QUANT.pt --data DATA`: per-layer SQNR, normalized L2
// error and cosine similarity of a quantized model against its float model
// (qfx/accuracy/numeric_compare.h), over data batches.

#include "commands.h"
#include "config_args.h"
#include "data_args.h"
#include "outputs.h"

#include "qfx/io/data_source.h"
#include "qfx/io/tensor_io.h"
#include "qfx/io/model_file.h"
#include "qfx/accuracy/numeric_compare.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>

namespace qfx::cli {
namespace {

struct Options {
  std::string float_model, quantized_model, data, engine = "onednn", json;
  int64_t max_batches = 4;
  bool quiet = false, force = false;
  DataArgs data_args;
};

void print_row(const std::string& name, const std::string& float_node, const LayerError& e) {
  char sqnr[32] = "inf";
  if (std::isfinite(e.sqnr_db())) std::snprintf(sqnr, sizeof(sqnr), "%.2f", e.sqnr_db());
  char line[256];
  std::snprintf(line, sizeof(line), "%-24s %-24s %9s %10.6f %9.6f\n", name.c_str(), float_node.c_str(), sqnr,
                e.normalized_l2(), e.cosine());
  std::cout << line;
}

void print_table(const NumericComparison& comparison) {
  char header[256];
  std::snprintf(header, sizeof(header), "%-24s %-24s %9s %10s %9s\n", "layer", "float node", "SQNR dB", "norm L2",
                "cosine");
  std::cout << header;
  for (const LayerError& layer : comparison.layers()) {
    if (layer.numel > 0) print_row(layer.name, layer.float_node, layer);
  }
  print_row("output", "output", comparison.output());
}

void run(const Options& o) {
  io::OutputOptions outputs = check_outputs({o.json}, {o.float_model, o.quantized_model, o.data}, o.force, true);
  use_engine(o.engine);
  io::DataOptions options = o.data_args.resolved();
  options.max_batches = o.max_batches;
  auto float_model = io::load_model(o.float_model);
  float_model->root().eval();
  std::unique_ptr<NumericComparison> paired;
  try {
    paired = std::make_unique<NumericComparison>(*float_model, o.quantized_model);
  } catch (const c10::Error& e) {
    bool unmatched = std::string(e.what_without_backtrace()).find("has a match") != std::string::npos;
    if (!unmatched) throw;
    TORCH_CHECK(false, "compare: no node of '", o.float_model, "' has a match in '", o.quantized_model,
                "' (was it made from that float model?)");
  }
  NumericComparison& comparison = *paired;
  auto source = io::open_data(o.data, options);
  int64_t items = 0;
  for_each_batch(*source, "data '" + o.data + "'", "compare", o.quiet, [&](const io::Batch& batch, int64_t) {
    comparison.add(batch.inputs);
    items += batch.size();
  });
  if (!o.json.empty()) {  // first: a failed write prints nothing
    nlohmann::json j = comparison.to_json();
    j["float_model"] = o.float_model;
    j["quantized_model"] = o.quantized_model;
    j["data"] = o.data;
    j["items"] = items;
    io::write_output(o.json, j.dump(1) + "\n", outputs);
  }
  print_table(comparison);
}

}  // namespace

void add_compare_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  o->data_args.options.batch_size = 64;
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "Per-layer SQNR, normalized L2 error and cosine similarity of a quantized model against its float model");
  cmd->add_option("float", o->float_model, "the float model (TorchScript .pt or torch.export .pt2)")->required();
  cmd->add_option("quantized", o->quantized_model, "its quantized TorchScript model (from qfx quantize)")->required();
  cmd->add_option("--data", o->data, "input data: torch.save file, IDX images file or image folder")->required();
  add_data_options(*cmd, o->data_args, "items per batch (default: 64)");
  cmd->add_option("--limit-batches", o->max_batches, "compare on at most this many batches (default: 4; 0: all)");
  cmd->add_option("--engine", o->engine, "quantized engine: onednn (default) or qnnpack");
  cmd->add_option("--json", o->json, "also write the results as JSON")->check(output_file());
  cmd->add_flag("-q,--quiet", o->quiet, "no progress on stderr");
  add_force_flag(*cmd, o->force);
  cmd->callback([o, &action] { action = [o] { run(*o); }; });
}

}  // namespace qfx::cli
