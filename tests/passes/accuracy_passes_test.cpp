// equalize and correct-bias against their definitions: CLE leaves the float
// function as it was and equal per-channel ranges on both sides of each
// pair; bias correction restores the mean output that weight quantization
// shifted.

#include "qfx/ir/graph_module.h"
#include "qfx/ir/interpreter.h"
#include "qfx/ir/parser.h"
#include "qfx/passes/pass_manager.h"
#include "qfx/quant/qconfig.h"
#include "qfx/quant/qconfig_mapping.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

namespace qfx::passes {
namespace {

/// conv1 -> ReLU module -> depthwise conv2 -> torch.relu -> 1x1 conv3, with
/// conv1's output channels scaled 1e-2 ... 1e2 so the ranges differ widely.
std::unique_ptr<ir::GraphModule> conv_chain() {
  auto gm = std::make_unique<ir::GraphModule>(ir::make_container_module(), ir::parse_graph(R"(graph():
    %x : [num_users=1] = placeholder[target=x]
    %conv1 : [num_users=1] = call_module[target=conv1](args = (%x,), kwargs = {})
    %relu1 : [num_users=1] = call_module[target=relu1](args = (%conv1,), kwargs = {})
    %conv2 : [num_users=1] = call_module[target=conv2](args = (%relu1,), kwargs = {})
    %relu2 : [num_users=1] = call_function[target=torch.relu](args = (%conv2,), kwargs = {})
    %conv3 : [num_users=1] = call_module[target=conv3](args = (%relu2,), kwargs = {})
    return conv3)"));
  torch::NoGradGuard no_grad;
  at::manual_seed(0);
  torch::nn::Conv2d conv1(torch::nn::Conv2dOptions(3, 8, 3).padding(1));
  conv1->weight.mul_(at::pow(10.0, at::linspace(-2, 2, 8)).reshape({8, 1, 1, 1}));
  conv1->bias.mul_(at::pow(10.0, at::linspace(-2, 2, 8)));
  gm->add_submodule("conv1", conv1.ptr());
  gm->add_submodule("relu1", torch::nn::ReLU().ptr());
  gm->add_submodule("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 8, 3).padding(1).groups(8)).ptr());
  gm->add_submodule("conv3", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 4, 1)).ptr());
  return gm;
}

at::Tensor weight_of(const ir::GraphModule& gm, const std::string& path) {
  for (const auto& item : gm.root().named_parameters()) {
    const std::string& name = item.key();
    if (name.size() >= 6 && name.compare(name.size() - 6, 6, "weight") == 0 && name.find(path) != std::string::npos) {
      return item.value();
    }
  }
  ADD_FAILURE() << "no weight under " << path;
  return {};
}

/// Per-channel ranges: of output channels (dim 0) or input channels (dim 1).
at::Tensor ranges(const at::Tensor& w, int64_t dim) {
  return w.abs().transpose(0, dim).reshape({w.size(dim), -1}).amax(1);
}

TEST(Equalize, KeepsTheFloatFunctionAndEqualizesEachPairsChannelRanges) {
  auto gm = conv_chain();
  at::Tensor x = at::randn({2, 3, 10, 10});
  at::Tensor before = ir::Interpreter(*gm).run({x}).toTensor();
  passes::PassOptions options;
  EXPECT_TRUE(PassManager().add("fuse").add("equalize").run(*gm, options));
  at::Tensor after = ir::Interpreter(*gm).run({x}).toTensor();
  EXPECT_LE((after - before).abs().max().item<double>(), 1e-5 * before.abs().max().item<double>());

  at::Tensor w1 = weight_of(*gm, "conv1");  // inside ConvReLU2d after fuse
  at::Tensor w2 = weight_of(*gm, "conv2");
  at::Tensor w3 = weight_of(*gm, "conv3");
  // the depthwise conv's channel i is both pairs' channel i: all three ranges meet
  EXPECT_TRUE(at::allclose(ranges(w1, 0), ranges(w2, 0), 1e-4)) << ranges(w1, 0) << ranges(w2, 0);
  EXPECT_TRUE(at::allclose(ranges(w2, 0), ranges(w3, 1), 1e-4)) << ranges(w2, 0) << ranges(w3, 1);
  at::Tensor r1 = ranges(w1, 0);
  EXPECT_LT((r1.max() / r1.min()).item<double>(), 100.0);  // was 1e4 apart
}

TEST(Equalize, LeavesLayersWhoseOutputHasOtherUsersAlone) {
  auto gm = std::make_unique<ir::GraphModule>(ir::make_container_module(), ir::parse_graph(R"(graph():
    %x : [num_users=1] = placeholder[target=x]
    %fc1 : [num_users=2] = call_module[target=fc1](args = (%x,), kwargs = {})
    %fc2 : [num_users=1] = call_module[target=fc2](args = (%fc1,), kwargs = {})
    %add : [num_users=1] = call_function[target=operator.add](args = (%fc1, %fc2), kwargs = {})
    return add)"));
  gm->add_submodule("fc1", torch::nn::Linear(4, 4).ptr());
  gm->add_submodule("fc2", torch::nn::Linear(4, 4).ptr());
  at::Tensor w1 = weight_of(*gm, "fc1").clone();
  EXPECT_FALSE(PassManager().add("equalize").run(*gm, {}));
  EXPECT_TRUE(at::equal(weight_of(*gm, "fc1"), w1));
}

/// fc (16 -> 8) alone, and the options of correct-bias on `batches`.
std::unique_ptr<ir::GraphModule> single_linear() {
  auto gm = std::make_unique<ir::GraphModule>(ir::make_container_module(), ir::parse_graph(R"(graph():
    %x : [num_users=1] = placeholder[target=x]
    %fc : [num_users=1] = call_module[target=fc](args = (%x,), kwargs = {})
    return fc)"));
  gm->add_submodule("fc", torch::nn::Linear(16, 8).ptr());
  return gm;
}

PassOptions bias_options(const std::vector<at::Tensor>& batches) {
  PassOptions options;
  options.qconfig_mapping = std::make_shared<quant::QConfigMapping>(
      quant::QConfigMapping().set_global(*quant::qconfig_preset("default_qconfig")));
  auto inputs = std::make_shared<std::vector<std::vector<c10::IValue>>>();
  for (const at::Tensor& batch : batches) inputs->push_back({batch});
  options.calibration_inputs = inputs;
  return options;
}

TEST(CorrectBias, TheWeightQuantizedLayersMeanOutputIsTheFloatOnes) {
  auto gm = single_linear();
  at::manual_seed(1);
  std::vector<at::Tensor> batches = {at::randn({64, 16}) + 3, at::randn({64, 16}) * 2 + 1};
  at::Tensor all = at::cat(batches);
  at::Tensor w = weight_of(*gm, "fc").clone();
  // default_qconfig's weight: MinMaxObserver(qint8, per_tensor_symmetric): scale = max|W| / 127.5, zero point 0
  double scale = w.abs().max().item<double>() / 127.5;
  at::Tensor w_quantized = at::fake_quantize_per_tensor_affine(w, scale, 0, -128, 127);
  at::Tensor float_mean = ir::Interpreter(*gm).run({all}).toTensor().mean(0);

  EXPECT_TRUE(PassManager().add("correct-bias").run(*gm, bias_options(batches)));
  auto* fc = dynamic_cast<torch::nn::LinearImpl*>(gm->find_submodule("fc").get());
  at::Tensor quantized_mean = at::linear(all, w_quantized, fc->bias).mean(0);
  EXPECT_TRUE(at::allclose(quantized_mean, float_mean, 1e-5, 1e-5)) << quantized_mean - float_mean;
  EXPECT_TRUE(at::equal(fc->weight, w));  // the weights stay float; convert quantizes them
}

TEST(CorrectBias, NeedsCalibrationDataAndSkipsLayersWithoutAQuantizedWeight) {
  auto gm = single_linear();
  PassOptions no_data = bias_options({});
  try {
    PassManager().add("correct-bias").run(*gm, no_data);
    ADD_FAILURE() << "no error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find("correct-bias needs calibration data"), std::string::npos);
  }
  PassOptions float_only = bias_options({at::randn({4, 16})});
  float_only.qconfig_mapping = std::make_shared<quant::QConfigMapping>();  // every node float
  at::Tensor bias = dynamic_cast<torch::nn::LinearImpl*>(gm->find_submodule("fc").get())->bias.clone();
  EXPECT_FALSE(PassManager().add("correct-bias").run(*gm, float_only));
  EXPECT_TRUE(at::equal(dynamic_cast<torch::nn::LinearImpl*>(gm->find_submodule("fc").get())->bias, bias));
}

TEST(Adaround, RoundsEachWeightUpOrDownToLowerTheLayersOutputErrorThanNearest) {
  auto gm = single_linear();
  at::manual_seed(2);
  std::vector<at::Tensor> batches;
  for (int i = 0; i < 4; ++i) batches.push_back(at::randn({64, 16}) + 0.5);
  at::Tensor w = weight_of(*gm, "fc").clone();
  auto* fc = dynamic_cast<torch::nn::LinearImpl*>(gm->find_submodule("fc").get());
  at::Tensor bias = fc->bias.clone();
  // default_qconfig's weight observer: scale = max|W| / 127.5, zero point 0, [-128, 127]
  const double scale = w.abs().max().item<double>() / 127.5;
  PassOptions options = bias_options(batches);
  options.adaround_iterations = 300;
  EXPECT_TRUE(PassManager().add("adaround").run(*gm, options));
  at::Tensor rounded = fc->weight.detach();

  EXPECT_EQ(rounded.abs().max().item<double>() / 127.5, scale);  // the observer's qparams stay the same
  at::Tensor steps = rounded / scale;
  at::Tensor extreme = (w == w.max()) | (w == w.min());
  EXPECT_TRUE(at::allclose(steps.masked_select(~extreme), at::round(steps).masked_select(~extreme), 0, 1e-4));
  EXPECT_TRUE(((rounded - w).abs() < scale * 1.0001).all().item<bool>());  // up or down, never further
  EXPECT_TRUE(at::equal(fc->bias, bias));

  at::Tensor x = at::cat(batches);
  auto output_error = [&](const at::Tensor& weight) {
    at::Tensor quantized = at::fake_quantize_per_tensor_affine(weight, scale, 0, -128, 127);
    return (at::linear(x, quantized, bias) - at::linear(x, w, bias)).pow(2).mean().item<double>();
  };
  EXPECT_LT(output_error(rounded), 0.8 * output_error(w)) << "nearest " << output_error(w);
}

}  // namespace
}  // namespace qfx::passes
