// TorchScript export of float modules: trainable submodules that import back.

#include "qfx/io/torchscript_export.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/interpreter.h"

#include <gtest/gtest.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/script.h>

#include <filesystem>

namespace qfx {
namespace {

std::unique_ptr<ir::GraphModule> conv_bn_linear() {
  auto gm = std::make_unique<ir::GraphModule>();
  gm->add_submodule("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(2, 3, 3).padding(1)).ptr());
  gm->add_submodule("bn", torch::nn::BatchNorm2d(3).ptr());
  gm->add_submodule("fc", torch::nn::Linear(3 * 4 * 4, 5).ptr());
  ir::Graph& g = gm->graph();
  ir::Node* x = g.call_module("bn", {g.call_module("conv", {g.placeholder("x")})});
  x = g.call_function("torch.relu", {x});
  g.output(g.call_module("fc", {g.call_function("torch.flatten", {x, int64_t{1}})}));
  gm->root().eval();
  return gm;
}

TEST(Export, FloatModulesWithParametersAreTrainableSubmodules) {
  torch::manual_seed(0);
  auto gm = conv_bn_linear();
  std::string path = (std::filesystem::temp_directory_path() / "qfx_export_float.pt").string();
  io::export_torchscript(*gm, path);
  torch::jit::Module script = torch::jit::load(path);

  std::set<std::string> params;
  for (const auto& p : script.named_parameters()) params.insert(p.name);
  EXPECT_EQ(params,
            (std::set<std::string>{"conv.weight", "conv.bias", "bn.weight", "bn.bias", "fc.weight", "fc.bias"}));
  EXPECT_TRUE(script.attr("bn").toModule().hasattr("running_mean"));
  EXPECT_EQ(script.attr("conv").toModule().type()->name()->qualifiedName(), "__torch__.torch.nn.Conv2d");
  EXPECT_FALSE(script.is_training());
  EXPECT_FALSE(script.attr("fc").toModule().is_training());

  at::Tensor x = torch::randn({2, 2, 4, 4});
  at::Tensor expected = ir::Interpreter(*gm).run({x}).toTensor();
  EXPECT_TRUE(script.forward({x}).toTensor().equal(expected));

  // imported again: the same modules, with parameters an optimizer can train
  auto back = io::import_torchscript(path);
  std::filesystem::remove(path);
  EXPECT_EQ(back->root().parameters().size(), 6u);
  EXPECT_NE(back->code().find("conv = self.conv(x)"), std::string::npos) << back->code();
  EXPECT_NE(back->code().find("bn = self.bn(conv)"), std::string::npos) << back->code();
  EXPECT_TRUE(ir::Interpreter(*back).run({x}).toTensor().equal(expected));
}

}  // namespace
}  // namespace qfx
