// Sensitivity trials and the accuracy-driven fallback on a model where one
// layer is made sensitive on purpose: fc2 has one weight of 1000 among
// weights of about 0.1, on an input that is always zero, so per-tensor int8
// rounds every other fc2 weight to zero without touching any activation's range.

#include "qfx/ir/graph_module.h"
#include "qfx/ir/interpreter.h"
#include "qfx/ir/module_registry.h"
#include "qfx/quant/qconfig_mapping.h"
#include "qfx/quantize.h"
#include "qfx/accuracy/fallback.h"
#include "support/fixtures.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/linear.h>

namespace qfx {
namespace {

std::unique_ptr<ir::GraphModule> model_with_a_sensitive_layer() {
  torch::NoGradGuard no_grad;
  at::manual_seed(0);
  auto gm = std::make_unique<ir::GraphModule>();
  torch::nn::Linear fc1(16, 16), fc2(16, 16), fc3(16, 4);
  fc1->weight[0].fill_(-1.0);  // relu(fc1)[0] is 0 for the non-negative inputs below
  fc1->bias[0] = -1.0;
  fc2->weight[0][0] = 1000.0;
  gm->add_submodule("fc1", fc1.ptr());
  gm->add_submodule("relu1", torch::nn::ReLU().ptr());
  gm->add_submodule("fc2", fc2.ptr());
  gm->add_submodule("relu2", torch::nn::ReLU().ptr());
  gm->add_submodule("fc3", fc3.ptr());
  ir::Graph& g = gm->graph();
  ir::Node* x = g.placeholder("x");
  for (const char* m : {"fc1", "relu1", "fc2", "relu2", "fc3"}) x = g.call_module(m, {x});
  g.output(x);
  return gm;
}

struct Trials {
  std::unique_ptr<ir::GraphModule> float_model = model_with_a_sensitive_layer();
  std::unique_ptr<ir::GraphModule> calibrated;
  std::unique_ptr<QuantizationTrials> trials;
  quant::QConfigMapping mapping = quant::get_default_qconfig_mapping("qnnpack");  // per-tensor weights

  explicit Trials(TrialMetric metric) {
    calibrated = float_model->deep_copy();
    prepare_fx(*calibrated, mapping);
    std::vector<LabelledBatch> batches;
    ir::Interpreter calibrate(*calibrated);
    for (int i = 0; i < 4; ++i) {
      at::Tensor x = at::rand({32, 16});
      calibrate.run({x});
      batches.push_back({{x}, at::argmax(ir::Interpreter(*float_model).run({x}).toTensor(), 1)});
    }
    trials = std::make_unique<QuantizationTrials>(
        *float_model, *calibrated, [](ir::GraphModule& gm) { convert_fx(gm); }, metric, batches);
  }
};

TEST(Sensitivity, TheLayerMadeSensitiveRanksFirst) {
  test::EngineGuard engine("qnnpack");
  Trials t(TrialMetric::kSqnr);
  std::vector<std::string> names;
  for (const QuantizableNode& node : t.trials->nodes()) names.push_back(node.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fc1", "fc2", "fc3"}));  // relus fused into LinearReLU
  SensitivityReport report = analyze_sensitivity(*t.trials);
  ASSERT_EQ(report.nodes.size(), 3u);
  EXPECT_EQ(report.nodes[0].node.name, "fc2");
  EXPECT_EQ(report.nodes[0].node.module_type, "torch.ao.nn.intrinsic.LinearReLU");
  // fc2 float: the others' int8 error only; fc2 alone quantized: most of the error
  EXPECT_GT(report.nodes[0].only_float, report.quantized_score + 10);
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_GT(report.nodes[0].only_float, report.nodes[i].only_float + 10) << report.table();
    EXPECT_LT(report.nodes[0].only_quantized, report.nodes[i].only_quantized - 10) << report.table();
  }
}

// Trials scored together resume from the all-quantized and all-float models'
// values; each score equals the trial run alone, in full, to the last bit.
TEST(Sensitivity, TrialsScoredTogetherEqualTrialsRunAlone) {
  test::EngineGuard engine("qnnpack");
  Trials t(TrialMetric::kSqnr);
  std::vector<std::set<std::string>> sets = {{}, {"fc1"}, {"fc2"}, {"fc3"}, {"fc1", "fc2"}, {"fc2", "fc3"}};
  double shared = 0;
  std::vector<double> together = t.trials->scores(sets, &shared);
  EXPECT_GT(shared, 0.2);  // fc3 float, for one, reuses fc1's and fc2's values of the all-quantized model
  ASSERT_EQ(together.size(), sets.size());
  for (size_t i = 0; i < sets.size(); ++i) EXPECT_EQ(together[i], t.trials->score(sets[i])) << i;
  EXPECT_NE(together[1], together[2]);
}

TEST(Sensitivity, FallbackLeavesTheSensitiveLayerFloatAndItsMappingReproducesTheChoice) {
  test::EngineGuard engine("qnnpack");
  Trials t(TrialMetric::kSqnr);
  const double budget = t.trials->float_score();  // SQNR is infinite for float: any finite score is "within"
  FallbackOptions within_float;
  within_float.max_drop = budget;
  FallbackResult none = fall_back(*t.trials, within_float);
  EXPECT_TRUE(none.met);
  EXPECT_TRUE(none.steps.empty());

  FallbackOptions impossible;  // an impossible budget, at most one node float
  impossible.max_drop = 0.0;
  impossible.max_float_nodes = 1;
  FallbackResult one = fall_back(*t.trials, impossible);
  ASSERT_EQ(one.steps.size(), 1u);
  EXPECT_EQ(one.steps[0].node.name, "fc2");
  EXPECT_FALSE(one.met);
  EXPECT_GT(one.score, one.quantized_score + 10);

  // prepare_fx with the written mapping leaves fc2 float: converted, the same module types as the trial's model
  quant::QConfigMapping mapping = mapping_with_float_nodes(t.mapping, *t.calibrated, one.float_nodes());
  auto again = t.float_model->deep_copy();
  prepare_fx(*again, mapping);
  ir::Interpreter(*again).run({at::rand({8, 16})});
  convert_fx(*again);
  std::unique_ptr<ir::GraphModule> trial = t.trials->convert_with(one.float_nodes());
  for (const char* path : {"fc1", "fc2", "fc3"}) {
    EXPECT_EQ(ir::module_type_name(*again->get_submodule(path)), ir::module_type_name(*trial->get_submodule(path)))
        << path;
  }
  EXPECT_EQ(ir::module_type_name(*again->get_submodule("fc2")), "torch.ao.nn.intrinsic.LinearReLU");
  EXPECT_EQ(ir::module_type_name(*again->get_submodule("fc1")), "torch.ao.nn.intrinsic.quantized.LinearReLU");
}

}  // namespace
}  // namespace qfx
