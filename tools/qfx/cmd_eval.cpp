// `qfx eval MODEL.pt --data DATA`: top-1 (and top-5) accuracy and latency of
// a classifier on labelled data, run by torch::jit (as deployed) or by the
// qfx interpreter.

#include "commands.h"
#include "config_args.h"
#include "data_args.h"
#include "outputs.h"

#include "qfx/io/data_source.h"
#include "qfx/io/model_file.h"
#include "qfx/io/tensor_io.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/interpreter.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/script.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>

namespace qfx::cli {
namespace {

struct Options {
  std::string model, data, engine = "onednn", json;
  int64_t max_batches = 0;
  bool interpreter = false, quiet = false, force = false;
  DataArgs data_args;
};

using Forward = std::function<c10::IValue(std::vector<c10::IValue>&)>;

/// Nodes of a forward graph (callees inlined) torch::jit runs. Its passes
/// recurse along the graph, about 1.5 KB of stack a node (measured on chains
/// of relu(x * c)); qfx's 1 GiB stack (main.cpp) holds some 700,000. Longer
/// graphs run in the qfx interpreter, which walks nodes in a loop.
constexpr size_t kMaxJitNodes = 100000;

size_t count_nodes(const torch::jit::Block& block) {
  size_t n = 0;
  for (const torch::jit::Node* node : block.nodes()) {
    ++n;
    for (const torch::jit::Block* inner : node->blocks()) n += count_nodes(*inner);
  }
  return n;
}

/// Whether `block` runs a static quantized convolution or linear (quantized::conv2d, quantized::linear_relu, ...).
bool script_has_static_int8(const torch::jit::Block& block) {
  for (const torch::jit::Node* node : block.nodes()) {
    std::string kind = node->kind().toQualString();
    if (kind.rfind("quantized::", 0) == 0 && kind.find("prepack") == std::string::npos &&
        kind.find("dynamic") == std::string::npos &&
        (kind.find("conv") != std::string::npos || kind.find("linear") != std::string::npos))
      return true;
    for (const torch::jit::Block* inner : node->blocks())
      if (script_has_static_int8(*inner)) return true;
  }
  return false;
}

size_t inlined_nodes(torch::jit::Module& module) {
  std::shared_ptr<torch::jit::Graph> graph = module.get_method("forward").graph()->copy();
  torch::jit::Inline(*graph);
  note_static_int8(script_has_static_int8(*graph->block()));
  return count_nodes(*graph->block());
}

Forward load_model(const Options& o, std::shared_ptr<void>& keep) {
  std::shared_ptr<torch::jit::Module> module;
  // torch::jit runs TorchScript files; a .pt2 program runs in the qfx interpreter
  const io::ModelFormat format = io::model_format(o.model);
  if (!o.interpreter && format != io::ModelFormat::kPt2 && format != io::ModelFormat::kPt2Flat) {
    io::check_model_readable(o.model);
    module = std::make_shared<torch::jit::Module>(io::load_script(o.model));
    size_t nodes = inlined_nodes(*module);
    if (nodes > kMaxJitNodes) {
      TORCH_WARN("'", o.model, "' has ", nodes, " nodes, more than torch::jit runs safely (", kMaxJitNodes,
                 "); running it in the qfx interpreter");
      module.reset();
    }
  }
  if (!module) {
    auto gm = std::shared_ptr<ir::GraphModule>(io::load_model(o.model));
    note_static_int8(has_static_int8_conv_or_linear(*gm));
    auto interpreter = std::make_shared<ir::Interpreter>(*gm);
    keep = std::make_shared<std::pair<std::shared_ptr<ir::GraphModule>, std::shared_ptr<ir::Interpreter>>>(gm,
                                                                                                           interpreter);
    return [interpreter](std::vector<c10::IValue>& in) { return interpreter->run(in); };
  }
  module->eval();
  keep = module;
  return [module](std::vector<c10::IValue>& in) { return module->forward(in); };
}

struct Tally {
  int64_t items = 0, top1 = 0, top5 = 0, timed_items = 0;
  double timed_seconds = 0;
  int64_t classes = 0;
};

/// Counts the batch's correct predictions; c10::Error for outputs that are not `[batch, classes]` logits.
void count(const at::Tensor& logits, const io::Batch& batch, Tally& t) {
  int64_t n = batch.labels.size(0);
  TORCH_CHECK(logits.dim() == 2 && logits.size(0) == n, "the model's output has shape ", logits.sizes(),
              "; qfx eval needs [batch, classes] scores");
  t.classes = logits.size(1);
  int64_t max_label = batch.labels.max().item<int64_t>();
  TORCH_CHECK(max_label < t.classes, "data item ", batch.first_index, "..", batch.first_index + n - 1, ": label ",
              max_label, " is out of the model's ", t.classes, " classes");
  // top-1 by argmax (the first of tied scores, as PyTorch's argmax; a
  // quantized model's dequantized scores tie often, and topk orders ties freely)
  t.top1 += logits.argmax(1).eq(batch.labels).sum().item<int64_t>();
  at::Tensor top = std::get<1>(logits.topk(std::min<int64_t>(5, t.classes), 1));
  t.top5 += top.eq(batch.labels.unsqueeze(1)).any(1).sum().item<int64_t>();
  t.items += n;
}

/// Writes --json first, then the summary: a failed write prints nothing.
void report(const Options& o, const Tally& t, int64_t batch_size, const io::OutputOptions& outputs) {
  double ms = t.timed_items > 0 ? 1000.0 * t.timed_seconds / t.timed_items : 0;
  if (!o.json.empty()) {
    nlohmann::json j = {{"model", o.model},           {"data", o.data},
                        {"items", t.items},           {"top1", double(t.top1) / t.items},
                        {"latency_ms_per_image", ms}, {"batch_size", batch_size},
                        {"classes", t.classes},       {"threads", at::get_num_threads()}};
    if (t.classes > 5) j["top5"] = double(t.top5) / t.items;
    io::write_output(o.json, j.dump(1) + "\n", outputs);
  }
  char line[200];
  std::snprintf(line, sizeof(line), "top-1 %.2f%% (%lld/%lld)", 100.0 * t.top1 / t.items,
                static_cast<long long>(t.top1), static_cast<long long>(t.items));
  std::cout << line;
  if (t.classes > 5) {
    std::snprintf(line, sizeof(line), "  top-5 %.2f%%", 100.0 * t.top5 / t.items);
    std::cout << line;
  }
  std::snprintf(line, sizeof(line), "\nlatency %.4f ms/image at batch %lld (%.0f images/s, %d threads)\n", ms,
                static_cast<long long>(batch_size), ms > 0 ? 1000.0 / ms : 0.0, at::get_num_threads());
  std::cout << line;
}

void run(const Options& o) {
  io::OutputOptions outputs = check_outputs({o.json}, {o.model, o.data}, o.force, true);
  c10::InferenceMode no_autograd;
  use_engine(o.engine);
  io::DataOptions options = o.data_args.resolved();
  options.max_batches = o.max_batches;
  auto source = io::open_data(o.data, options);
  TORCH_CHECK(source->num_classes() > 0, "data '", o.data,
              "' has no labels; qfx eval needs labelled data (IDX images with their labels file, or an image folder)");
  std::shared_ptr<void> keep;
  Forward forward = load_model(o, keep);
  Tally tally;
  bool single = source->num_batches() == 1;
  for_each_batch(*source, "data '" + o.data + "'", "eval", o.quiet, [&](const io::Batch& batch, int64_t index) {
    std::vector<c10::IValue> inputs = batch.inputs;
    auto start = std::chrono::steady_clock::now();
    c10::IValue out = forward(inputs);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (index > 0 || single) {  // the first batch warms up
      tally.timed_seconds += seconds;
      tally.timed_items += batch.labels.size(0);
    }
    TORCH_CHECK(out.isTensor(), "the model returns a ", out.tagKind(), "; qfx eval needs one tensor of scores");
    at::Tensor logits = out.toTensor();
    count(logits.is_quantized() ? logits.dequantize() : logits, batch, tally);
  });
  report(o, tally, options.batch_size, outputs);
}

}  // namespace

void add_eval_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  o->data_args.options.batch_size = 64;
  CLI::App* cmd = app.add_subcommand("eval", "Top-1/top-5 accuracy and latency of a classifier on labelled data");
  cmd->add_option("model", o->model, "model file: float (TorchScript .pt or torch.export .pt2), or int8 from qfx quantize")->required();
  cmd->add_option("--data", o->data, "IDX images file (labels next to it), image folder (one sub-folder per class)")
      ->required();
  add_data_options(*cmd, o->data_args, "images per batch (default: 64)");
  cmd->add_option("--limit-batches", o->max_batches, "evaluate at most this many batches (default: all)");
  cmd->add_option("--engine", o->engine, "quantized engine: onednn (default) or qnnpack");
  cmd->add_flag("--interpreter", o->interpreter, "run the model in the qfx interpreter instead of torch::jit");
  cmd->add_option("--json", o->json, "also write the results as JSON")->check(output_file());
  cmd->add_flag("-q,--quiet", o->quiet, "no progress on stderr");
  add_force_flag(*cmd, o->force);
  cmd->callback([o, &action] { action = [o] { run(*o); }; });
}

}  // namespace qfx::cli
