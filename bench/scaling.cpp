// Scaling of prepare_fx + convert_fx with graph size: synthetic chains of
// conv -> batch norm -> relu blocks with a residual add every 4 blocks, built
// directly as GraphModules, with get_default_qconfig_mapping("onednn"); one
// untimed calibration forward in between. prepare and convert run as the
// pass pipelines prepare_fx and convert_fx run (fuse, insert-observers;
// convert-to-reference, lower-to-native), timed per pass. Each size runs once
// first (the process's first run also pays one-time set-up: library
// initialization, the allocator's first pages; shown in a column of its own),
// then REPEATS times: the median run, with the spread. Prints two Markdown tables: time per node,
// which should stay flat (linear time), and each pass's wall time.
//
//   bench_scaling [--repeats R] [NODES ...]   (default: 3 repeats of 1000 5000 20000 100000)

#include "pass_seconds.h"

#include "qfx/ir/graph_module.h"
#include "qfx/ir/interpreter.h"
#include "qfx/passes/pass_manager.h"
#include "qfx/quantize.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

namespace {

class Quiet : public c10::WarningHandler {
 public:
  void process(const c10::SourceLocation&, const std::string&, const bool) override {}
};

/// x -> [conv -> bn -> relu] * blocks, with x + y every 4 blocks: about
/// `nodes` nodes (13 per 4 blocks).
std::unique_ptr<qfx::ir::GraphModule> chain(int nodes) {
  const int blocks = std::max(4, nodes * 4 / 13);
  auto gm = std::make_unique<qfx::ir::GraphModule>();
  qfx::ir::Graph& g = gm->graph();
  qfx::ir::Node* x = g.placeholder("x");
  qfx::ir::Node* skip = x;
  for (int i = 0; i < blocks; ++i) {
    std::string id = std::to_string(i), conv = "conv" + id, bn = "bn" + id, relu = "relu" + id;
    torch::nn::Conv2d conv_module(torch::nn::Conv2dOptions(4, 4, 1));
    conv_module->weight.data().mul_(0.01);  // each add grows x by ~1%: finite at 100k nodes
    gm->add_submodule(conv, conv_module.ptr());
    gm->add_submodule(bn, torch::nn::BatchNorm2d(4).ptr());
    gm->add_submodule(relu, torch::nn::ReLU().ptr());
    x = g.call_module(relu, {g.call_module(bn, {g.call_module(conv, {x})})});
    if (i % 4 == 3) {
      x = g.call_function("operator.add", {x, skip});
      skip = x;
    }
  }
  g.output(x);
  return gm;
}

/// `| size | each pass's seconds ... | all lints' seconds |` for the per-pass table.
std::string pass_row(size_t nodes, const std::vector<qfx::passes::PassTime>& times) {
  std::ostringstream row;
  row << "| " << nodes << " |";
  double lint = 0;
  for (const auto& t : times) {
    char cell[32];
    std::snprintf(cell, sizeof cell, " %.3f |", t.seconds);
    row << cell;
    lint += t.lint_seconds;
  }
  char cell[32];
  std::snprintf(cell, sizeof cell, " %.3f |", lint);
  row << cell;
  return row.str();
}

/// One prepare_fx + calibration + convert_fx of a fresh chain, timed per pass.
struct Run {
  size_t float_nodes = 0, prepared_nodes = 0;
  std::vector<qfx::passes::PassTime> times;
  double prepare() const { return pass_seconds(times, 0, 2); }
  double convert() const { return pass_seconds(times, 2, 4); }
  double us_per_node() const { return 1e6 * (prepare() + convert()) / static_cast<double>(float_nodes); }
};

Run run_once(int nodes, const qfx::passes::PassOptions& options) {
  auto gm = chain(nodes);
  gm->root().eval();
  Run run;
  run.float_nodes = gm->graph().size();
  qfx::passes::PassManager().add("fuse").add("insert-observers").time_passes(run.times).run(*gm, options);
  run.prepared_nodes = gm->graph().size();
  qfx::ir::Interpreter(*gm).run({at::rand({1, 4, 2, 2})});
  qfx::passes::PassManager()
      .add("convert-to-reference")
      .add("lower-to-native")
      .time_passes(run.times)
      .run(*gm, options);
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 3;
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--repeats" && i + 1 < argc) {
      repeats = std::max(1, std::stoi(argv[++i]));
    } else {
      sizes.push_back(std::stoi(argv[i]));
    }
  }
  if (sizes.empty()) sizes = {1000, 5000, 20000, 100000};
  c10::InferenceMode no_autograd;
  Quiet quiet;
  c10::Warning::set_warning_handler(&quiet);
  qfx::passes::PassOptions options;
  options.qconfig_mapping =
      std::make_shared<qfx::quant::QConfigMapping>(qfx::quant::get_default_qconfig_mapping("onednn"));
  std::cout << "| float nodes | prepared nodes | prepare s | convert s | prepare+convert us/node | min-max us/node | "
               "first run us/node |\n"
            << "|---|---|---|---|---|---|---|\n";
  std::vector<std::string> pass_rows;
  for (int nodes : sizes) {
    const double first = run_once(nodes, options).us_per_node();  // the process's first: one-time set-up
    std::vector<Run> runs;
    for (int r = 0; r < repeats; ++r) runs.push_back(run_once(nodes, options));
    std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.us_per_node() < b.us_per_node(); });
    const Run& median = runs[runs.size() / 2];
    std::printf("| %zu | %zu | %.3f | %.3f | %.1f | %.1f-%.1f | %.1f |\n", median.float_nodes, median.prepared_nodes,
                median.prepare(), median.convert(), median.us_per_node(), runs.front().us_per_node(),
                runs.back().us_per_node(), first);
    pass_rows.push_back(pass_row(median.float_nodes, median.times));
  }
  std::cout << "\n| float nodes | fuse s | insert-observers s | convert-to-reference s | lower-to-native s | lint s |\n"
            << "|---|---|---|---|---|---|\n";
  for (const std::string& row : pass_rows) std::cout << row << "\n";
  return 0;
}
