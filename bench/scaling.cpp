// Scaling of prepare_fx + convert_fx with graph size: synthetic chains of
// conv -> batch norm -> relu blocks with a residual add every 4 blocks, built
// directly as GraphModules, with get_default_qconfig_mapping("onednn"); one
// untimed calibration forward in between. Prints a Markdown table; time per
// node should stay flat (linear time).
//
//   bench_scaling [NODES ...]   (default: 1000 5000 20000 100000)

#include "qfx/ir/graph_module.h"
#include "qfx/ir/interpreter.h"
#include "qfx/quantize.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

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

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::stoi(argv[i]));
  if (sizes.empty()) sizes = {1000, 5000, 20000, 100000};
  c10::InferenceMode no_autograd;
  Quiet quiet;
  c10::Warning::set_warning_handler(&quiet);
  qfx::quant::QConfigMapping mapping = qfx::quant::get_default_qconfig_mapping("onednn");
  std::cout << "| float nodes | prepared nodes | prepare s | convert s | prepare+convert us/node |\n"
            << "|---|---|---|---|---|\n";
  for (int nodes : sizes) {
    auto gm = chain(nodes);
    gm->root().eval();
    size_t float_nodes = gm->graph().size();
    auto start = std::chrono::steady_clock::now();
    qfx::prepare_fx(*gm, mapping);
    double prepare = seconds_since(start);
    size_t prepared_nodes = gm->graph().size();
    qfx::ir::Interpreter(*gm).run({at::rand({1, 4, 2, 2})});
    start = std::chrono::steady_clock::now();
    qfx::convert_fx(*gm);
    double convert = seconds_since(start);
    std::printf("| %zu | %zu | %.3f | %.3f | %.1f |\n", float_nodes, prepared_nodes, prepare, convert,
                1e6 * (prepare + convert) / static_cast<double>(float_nodes));
  }
  return 0;
}
