// fuse builds the fused modules of qfx's own fuser methods ahead of its
// rewrite, on two threads when a core is idle, from the modules as they were
// before any fusion (as PyTorch's fuse_fx reads named_modules once): what it
// builds and raises is what the in-order rewrite gives.

#include "qfx/ir/graph_module.h"
#include "qfx/quantize.h"
#include "support/fixtures.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

namespace qfx {
namespace {

torch::nn::BatchNorm2d batch_norm(int channels) {
  torch::nn::BatchNorm2d bn(channels);
  bn->running_mean.uniform_(-1, 1);
  bn->running_var.uniform_(0.5, 2);
  bn->weight.data().uniform_(0.5, 1.5);
  bn->bias.data().uniform_(-1, 1);
  return bn;
}

/// conv.weight * (bn.weight / sqrt(bn.running_var + eps)), per output channel.
at::Tensor folded_weight(const torch::nn::Conv2d& conv, const torch::nn::BatchNorm2d& bn) {
  at::Tensor factor = bn->weight / at::sqrt(bn->running_var + bn->options.eps());
  return conv->weight * factor.reshape({-1, 1, 1, 1});
}

at::Tensor weight_of(const ir::GraphModule& gm, const std::string& path) {
  return gm.get_submodule(path)->named_parameters(false)["weight"];
}

TEST(FuseAhead, EachConvFoldsItsOwnBatchNorm) {
  at::manual_seed(3);
  auto gm = std::make_unique<ir::GraphModule>();
  ir::Graph& g = gm->graph();
  ir::Node* x = g.placeholder("x");
  std::vector<at::Tensor> expected;
  for (int i = 0; i < 16; ++i) {
    std::string id = std::to_string(i);
    torch::nn::Conv2d conv(torch::nn::Conv2dOptions(4, 4, 1));
    torch::nn::BatchNorm2d bn = batch_norm(4);
    expected.push_back(folded_weight(conv, bn).detach());
    gm->add_submodule("conv" + id, conv.ptr());
    gm->add_submodule("bn" + id, bn.ptr());
    x = g.call_module("bn" + id, {g.call_module("conv" + id, {x})});
  }
  g.output(x);
  gm->root().eval();
  fuse_fx(*gm);
  for (int i = 0; i < 16; ++i) {
    SCOPED_TRACE("conv" + std::to_string(i));
    EXPECT_TRUE(at::allclose(weight_of(*gm, "conv" + std::to_string(i)), expected[i], 1e-6, 1e-7));
  }
}

TEST(FuseAhead, ModulesCalledTwiceFoldOnceAsPyTorch) {
  // bn(conv(bn(conv(x)))): PyTorch 1.13's fuse_fx folds bn into conv once
  // (both fusions read the modules as they were), not a second time into
  // the already folded conv.
  at::manual_seed(4);
  auto gm = std::make_unique<ir::GraphModule>();
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(4, 4, 1));
  torch::nn::BatchNorm2d bn = batch_norm(4);
  at::Tensor expected = folded_weight(conv, bn).detach();
  gm->add_submodule("conv", conv.ptr());
  gm->add_submodule("bn", bn.ptr());
  ir::Graph& g = gm->graph();
  ir::Node* x = g.placeholder("x");
  for (int i = 0; i < 2; ++i) x = g.call_module("bn", {g.call_module("conv", {x})});
  g.output(x);
  gm->root().eval();
  fuse_fx(*gm);
  std::vector<std::string> targets;
  for (const ir::Node* n : gm->graph().nodes()) targets.push_back(n->target());
  EXPECT_EQ(targets, (std::vector<std::string>{"x", "conv", "conv", "output"}));
  EXPECT_TRUE(at::allclose(weight_of(*gm, "conv"), expected, 1e-6, 1e-7));
}

TEST(FuseAhead, RaisesTheErrorOfTheFirstFusionItApplies) {
  // Fusions apply from the output backwards: linear-bn before the convs.
  auto gm = std::make_unique<ir::GraphModule>();
  ir::Graph& g = gm->graph();
  ir::Node* x = g.placeholder("x");
  for (int i = 0; i < 8; ++i) {
    std::string id = std::to_string(i);
    gm->add_submodule("conv" + id, torch::nn::Conv2d(torch::nn::Conv2dOptions(4, 4, 1)).ptr());
    gm->add_submodule("bn" + id, torch::nn::BatchNorm2d(4).ptr());
    x = g.call_module("bn" + id, {g.call_module("conv" + id, {x})});
  }
  gm->add_submodule("linear", torch::nn::Linear(4, 4).ptr());
  gm->add_submodule("bn_linear", torch::nn::BatchNorm1d(4).ptr());
  g.output(g.call_module("bn_linear", {g.call_module("linear", {x})}));
  gm->root().train(true);
  for (int i = 0; i < 8; ++i) gm->get_submodule("bn" + std::to_string(i))->eval();
  gm->get_submodule("bn_linear")->eval();
  std::string error = test::error_of([&] { fuse_fx(*gm); });
  EXPECT_NE(error.find("Linear and BN both must be in the same mode (train or eval)."), std::string::npos) << error;
}

}  // namespace
}  // namespace qfx
