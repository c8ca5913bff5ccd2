// TorchScript export of float modules: trainable submodules that import back.

#include "support/fixtures.h"

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

TEST(Export, FloatModulesWithParametersAreTrainableSubmodules) {
  torch::manual_seed(0);
  auto gm = test::conv_bn_linear();
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
