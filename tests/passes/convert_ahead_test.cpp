// convert_fx computes observers' qparams and builds quantized modules ahead
// of its rewrite, on two threads when a core is idle: what it reports and
// builds is what the in-order rewrite gives.

#include "qfx/ir/graph_module.h"
#include "qfx/ir/interpreter.h"
#include "qfx/nn/quantized.h"
#include "qfx/quantize.h"
#include "support/fixtures.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>

namespace qfx {
namespace {

/// x -> linear0 -> linear1 -> ... -> linear{n-1}.
std::unique_ptr<ir::GraphModule> linear_chain(int n) {
  auto gm = std::make_unique<ir::GraphModule>();
  ir::Graph& g = gm->graph();
  ir::Node* x = g.placeholder("x");
  for (int i = 0; i < n; ++i) {
    std::string name = "linear" + std::to_string(i);
    gm->add_submodule(name, torch::nn::Linear(8, 8).ptr());
    x = g.call_module(name, {x});
  }
  g.output(x);
  gm->root().eval();
  return gm;
}

TEST(ConvertAhead, NoDataWarningsOncePerObserverInGraphOrder) {
  auto gm = linear_chain(12);
  prepare_fx(*gm, quant::get_default_qconfig_mapping("onednn"));
  std::vector<std::string> messages;
  {
    test::WarningCapture capture;
    convert_fx(*gm);  // never calibrated
    messages = capture.messages();
  }
  std::vector<std::string> expected;
  for (int i = 0; i <= 12; ++i) {
    expected.push_back("HistogramObserver 'activation_post_process_" + std::to_string(i) + "'");
  }
  std::vector<std::string> activation_warnings;
  for (const std::string& m : messages) {
    if (m.find("HistogramObserver") != std::string::npos) activation_warnings.push_back(m);
  }
  ASSERT_EQ(activation_warnings.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(activation_warnings[i].rfind(expected[i], 0), 0u) << activation_warnings[i];
  }
}

/// The weight a quantized linear's packed params hold.
at::Tensor unpacked_weight(const nn::QuantizedModuleImpl& linear) {
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_unpack", "");
  std::vector<c10::IValue> stack = {linear.attribute("_packed_params")};
  op.callBoxed(&stack);
  return stack.at(0).toTensor();
}

TEST(ConvertAhead, EachLinearGetsItsOwnWeights) {
  at::manual_seed(5);
  auto gm = linear_chain(16);
  prepare_fx(*gm, quant::get_default_qconfig_mapping("onednn"));
  std::vector<at::Tensor> weights;
  for (int i = 0; i < 16; ++i) {
    weights.push_back(gm->get_submodule("linear" + std::to_string(i))->named_parameters(false)["weight"].clone());
  }
  ir::Interpreter(*gm).run({at::randn({4, 8})});
  convert_fx(*gm);
  for (int i = 0; i < 16; ++i) {
    SCOPED_TRACE("linear" + std::to_string(i));
    auto* linear = dynamic_cast<nn::QuantizedModuleImpl*>(gm->get_submodule("linear" + std::to_string(i)).get());
    ASSERT_NE(linear, nullptr);
    at::Tensor w = unpacked_weight(*linear);
    at::Tensor half_step = w.q_per_channel_scales().to(at::kFloat).unsqueeze(1) / 2;
    EXPECT_TRUE(((w.dequantize() - weights[i]).abs() <= half_step * 1.0001).all().item<bool>());
  }
}

}  // namespace
}  // namespace qfx
