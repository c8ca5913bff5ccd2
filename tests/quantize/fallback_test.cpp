// The accuracy-driven fallback's search (accuracy/fallback.h) on two models
// made for it: damage spread over many layers, where no single node float
// meets the budget, and a ReLU6 network on qnnpack with the kernel
// workarounds off, where LibTorch's clamp kernel, not quantization, loses
// the accuracy.

#include "qfx/accuracy/fallback.h"
#include "qfx/ir/graph_module.h"
#include "qfx/ir/interpreter.h"
#include "qfx/ir/kernel_workarounds.h"
#include "qfx/quant/qconfig_mapping.h"
#include "qfx/quantize.h"
#include "support/fixtures.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>

namespace qfx {
namespace {

/// Eight linear layers, each with one large weight among small ones, so that
/// per-tensor int8 rounds most of each layer's weights coarsely: every layer
/// costs a little accuracy, none much.
std::unique_ptr<ir::GraphModule> spread_damage_model() {
  torch::NoGradGuard no_grad;
  at::manual_seed(1);
  auto gm = std::make_unique<ir::GraphModule>();
  ir::Graph& g = gm->graph();
  ir::Node* x = g.placeholder("x");
  for (int i = 0; i < 8; ++i) {
    torch::nn::Linear fc(24, 24);
    fc->weight.normal_(0, 0.25);
    fc->weight[i][i] = 4.0;  // the outlier: int8's step becomes ~0.03
    std::string name = "fc" + std::to_string(i);
    gm->add_submodule(name, fc.ptr());
    x = g.call_module(name, {x});
  }
  g.output(x);
  return gm;
}

/// conv, ReLU6, conv, ReLU6, pool, linear: the clamp family after qnnpack
/// convolutions, whose outputs are channels_last.
std::unique_ptr<ir::GraphModule> relu6_model() {
  torch::NoGradGuard no_grad;
  at::manual_seed(2);
  auto gm = std::make_unique<ir::GraphModule>();
  gm->add_submodule("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 16, 3).padding(1)).ptr());
  gm->add_submodule("act1", torch::nn::ReLU6().ptr());
  gm->add_submodule("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 16, 3).padding(1)).ptr());
  gm->add_submodule("act2", torch::nn::ReLU6().ptr());
  gm->add_submodule("pool", torch::nn::AdaptiveAvgPool2d(1).ptr());
  gm->add_submodule("flatten", torch::nn::Flatten().ptr());
  torch::nn::Linear fc(16, 10);
  fc->bias.zero_();  // the classes by the features, not by the bias
  fc->weight.mul_(4);
  gm->add_submodule("fc", fc.ptr());
  ir::Graph& g = gm->graph();
  ir::Node* x = g.placeholder("x");
  for (const char* m : {"conv1", "act1", "conv2", "act2", "pool", "flatten", "fc"}) x = g.call_module(m, {x});
  g.output(x);
  return gm;
}

/// A calibrated model and its trials, top-1 against the float model's own
/// predictions, with the reference convert for kernel gaps.
struct FallbackTrials {
  std::unique_ptr<ir::GraphModule> float_model;
  std::unique_ptr<ir::GraphModule> calibrated;
  std::unique_ptr<QuantizationTrials> trials;

  FallbackTrials(std::unique_ptr<ir::GraphModule> model, const std::vector<at::Tensor>& inputs)
      : float_model(std::move(model)), calibrated(float_model->deep_copy()) {
    prepare_fx(*calibrated, quant::get_default_qconfig_mapping("qnnpack"));
    std::vector<LabelledBatch> batches;
    ir::Interpreter calibrate(*calibrated);
    for (const at::Tensor& x : inputs) {
      calibrate.run({x});
      batches.push_back({{x}, at::argmax(ir::Interpreter(*float_model).run({x}).toTensor(), 1)});
    }
    trials = std::make_unique<QuantizationTrials>(
        *float_model, *calibrated, [](ir::GraphModule& gm) { convert_fx(gm); }, TrialMetric::kTop1, batches,
        [](ir::GraphModule& gm) { convert_to_reference_fx(gm); });
  }
};

std::vector<at::Tensor> random_batches(at::IntArrayRef sizes, int count) {
  at::manual_seed(3);
  std::vector<at::Tensor> batches;
  for (int i = 0; i < count; ++i) batches.push_back(at::randn(sizes));
  return batches;
}

TEST(Fallback, FindsDamageSpreadOverLayersThatNoSingleNodeMeets) {
  test::EngineGuard engine("qnnpack");
  FallbackTrials t(spread_damage_model(), random_batches({128, 24}, 4));
  const double float_score = t.trials->float_score();
  const double quantized = t.trials->score({});
  double best_single = quantized;
  for (const std::string& name : t.trials->node_names()) best_single = std::max(best_single, t.trials->score({name}));
  ASSERT_LT(best_single, float_score - 2) << "the model no longer spreads its damage";
  FallbackOptions options;
  options.max_drop = (float_score - best_single) / 2;  // no node alone meets it
  FallbackResult result = fall_back(*t.trials, options);
  EXPECT_TRUE(result.met);
  EXPECT_FALSE(result.out_of_trials);
  EXPECT_GE(result.steps.size(), 2u);
  EXPECT_LE(result.trials, max_trials_for(result.candidates));
  EXPECT_EQ(result.candidates, 8);
  EXPECT_EQ(result.quantized_score, quantized);
  // the result is what its float nodes score, and every one of them is needed
  std::set<std::string> chosen = result.float_nodes();
  EXPECT_EQ(t.trials->score(chosen), result.score);
  for (const std::string& name : chosen) {
    std::set<std::string> without = chosen;
    without.erase(name);
    EXPECT_GT(float_score - t.trials->score(without), options.max_drop) << name << " was not needed";
  }
}

TEST(Fallback, StopsAtTheTrialBudget) {
  test::EngineGuard engine("qnnpack");
  FallbackTrials t(spread_damage_model(), random_batches({128, 24}, 4));
  FallbackOptions options;
  options.max_drop = 0;
  options.max_trials = 5;  // too few to rank 8 candidates (16 single-node trials)
  FallbackResult result = fall_back(*t.trials, options);
  EXPECT_TRUE(result.out_of_trials);
  EXPECT_LE(result.trials, 5);
  EXPECT_EQ(t.trials->score(result.float_nodes()), result.score);
}

TEST(Fallback, KernelFaultsRankFirstAndAreLeftFloat) {
  test::EngineGuard engine("qnnpack");
  test::KernelWorkaroundsOff off;
  FallbackTrials t(relu6_model(), random_batches({32, 3, 12, 12}, 4));
  // LibTorch's qnnpack clamp is wrong on the convolutions' channels_last outputs: the ReLU6 nodes only
  const std::map<std::string, KernelGap>& gaps = t.trials->kernel_gaps();
  for (const char* node : {"act1", "act2"}) {
    ASSERT_EQ(gaps.count(node), 1u) << node;
    EXPECT_TRUE(gaps.at(node).fault()) << node << ": " << gaps.at(node).steps << " steps";
  }
  for (const auto& [node, gap] : gaps) {
    if (node != "act1" && node != "act2") EXPECT_LE(gap.steps, 1) << node;
  }
  SensitivityReport report = analyze_sensitivity(*t.trials);
  ASSERT_GE(report.nodes.size(), 2u);
  EXPECT_TRUE(report.nodes[0].kernel_fault() && report.nodes[1].kernel_fault()) << report.table();

  const double faults_float = t.trials->score({"act1", "act2"});
  ASSERT_GT(faults_float, report.quantized_score + 10) << "the clamp kernel no longer costs accuracy";
  FallbackOptions options;  // what leaving the faulty nodes float reaches
  options.max_drop = t.trials->float_score() - faults_float;
  FallbackResult result = fall_back(*t.trials, options);
  EXPECT_TRUE(result.met) << result.to_json().dump();
  ASSERT_FALSE(result.steps.empty());
  for (const FallbackStep& step : result.steps) EXPECT_GT(step.kernel_gap, 1) << step.node.name;
}

TEST(Fallback, WithTheWorkaroundsQnnpackHasNoKernelFault) {
  test::EngineGuard engine("qnnpack");
  FallbackTrials t(relu6_model(), random_batches({32, 3, 12, 12}, 4));
  for (const auto& [node, gap] : t.trials->kernel_gaps()) EXPECT_LE(gap.steps, 1) << node;
  EXPECT_EQ(t.trials->kernel_gaps().count("act1"), 1u);
}

}  // namespace
}  // namespace qfx
