// Fused modules and fusers: type checks, forward, repr, the default fuser a
// fused_module implies, and onednn's conv + add fusers and getters.

#include "qfx/backend/backend_config.h"
#include "qfx/backend/backend_registry.h"
#include "qfx/backend/builtin_backends.h"
#include "qfx/ir/graph.h"
#include "qfx/ir/module_registry.h"
#include "qfx/nn/fusion.h"
#include "support/fixtures.h"

#include <gtest/gtest.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

namespace qfx::nn {
namespace {

using backend::FuserPart;
using test::error_of;

std::shared_ptr<torch::nn::Conv2dImpl> conv2d() {
  return std::make_shared<torch::nn::Conv2dImpl>(torch::nn::Conv2dOptions(2, 3, 3).padding(1));
}

c10::IValue run(torch::nn::Module& m, std::vector<c10::IValue> inputs) {
  return ir::ModuleRegistry::instance().find(m)->forward(m, inputs);
}

TEST(FusedModules, CheckTheirPartsLikePython) {
  auto relu = std::make_shared<torch::nn::ReLUImpl>();
  ConvReLU2d fused(conv2d(), relu);
  EXPECT_EQ(ir::module_type_name(*fused), "torch.ao.nn.intrinsic.ConvReLU2d");
  EXPECT_EQ(fused->module(1), relu);
  auto sigmoid = std::make_shared<torch::nn::SigmoidImpl>();
  EXPECT_NE(error_of([&] { ConvReLU2d(conv2d(), sigmoid); })
                .find("Incorrect types for input modules of ConvReLU2d: got (torch.nn.Conv2d, torch.nn.Sigmoid), "
                      "expected (torch.nn.Conv2d, torch.nn.ReLU)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ConvBnReLU2d(conv2d(), relu); }).find("Incorrect types"), std::string::npos);
}

TEST(FusedModules, ForwardRunsThePartsInOrder) {
  auto conv = conv2d();
  auto relu = std::make_shared<torch::nn::ReLUImpl>();
  at::Tensor x = torch::randn({1, 2, 5, 5});
  at::Tensor y = torch::randn({1, 3, 5, 5});
  EXPECT_TRUE(run(*ConvReLU2d(conv, relu).ptr(), {x}).toTensor().equal(at::relu(conv->forward(x))));
  EXPECT_TRUE(run(*ConvAdd2d(conv, "operator.add").ptr(), {x, y}).toTensor().equal(conv->forward(x) + y));
  ConvAddReLU2d add_relu(conv, "torch.add", relu);
  EXPECT_TRUE(run(*add_relu.ptr(), {x, y}).toTensor().equal(at::relu(conv->forward(x) + y)));
  // As Python: the conv is item 0, the relu the attribute `relu`.
  EXPECT_EQ(
      ir::module_repr(*add_relu),
      "ConvAddReLU2d(\n  (0): Conv2d(2, 3, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n  (relu): ReLU()\n)");
  EXPECT_NE(error_of([&] { run(*add_relu.ptr(), {x}); }).find("takes 2 input(s), got 1"), std::string::npos);
}

TEST(DefaultFuser, BuildsTheFusedModuleFromTheMatchedModules) {
  auto config = backend::BackendPatternConfig()
                    .set_pattern({"torch.nn.Conv2d", "torch.nn.ReLU"})
                    .set_fused_module("torch.ao.nn.intrinsic.ConvReLU2d");
  auto conv = conv2d();
  auto relu = std::make_shared<torch::nn::ReLUImpl>();
  auto fused = backend::fuser_of(config)(false, {{conv, "torch.nn.Conv2d"}, {relu, "torch.nn.ReLU"}});
  EXPECT_EQ(ir::module_type_name(*fused), "torch.ao.nn.intrinsic.ConvReLU2d");
  EXPECT_EQ(dynamic_cast<FusedModuleImpl&>(*fused).module(0), conv);

  // A function the fused module would need as a module is an error, not a silent skip.
  auto tanh_config = backend::BackendPatternConfig()
                         .set_pattern({"torch.nn.Linear", "torch.tanh"})
                         .set_fused_module("torch.ao.nn.intrinsic.LinearTanh");
  auto linear = std::make_shared<torch::nn::LinearImpl>(4, 4);
  EXPECT_NE(error_of([&] {
              backend::fuser_of(tanh_config)(false, {{linear, "torch.nn.Linear"}, {nullptr, "torch.tanh"}});
            }).find("LinearTanh is built from modules; torch.tanh is not a module"),
            std::string::npos);

  pattern::OpCatalog::instance().add("my_lib.ConvSquare2d", pattern::OpKind::kModule);
  auto unbuildable = backend::BackendPatternConfig()
                         .set_pattern({"torch.nn.Conv2d", "torch.nn.ReLU"})
                         .set_fused_module("my_lib.ConvSquare2d");
  EXPECT_NE(error_of([&] { backend::fuser_of(unbuildable); }).find("has no registered constructor"), std::string::npos);
}

/// x, y -> conv(x) -> bn -> add(y, bn) -> relu: a graph onednn's right-hand patterns match.
struct ConvAddGraph {
  ir::Graph graph;
  ir::Node *x, *y, *conv, *bn, *add, *relu;
  ConvAddGraph() {
    x = graph.placeholder("x");
    y = graph.placeholder("y");
    conv = graph.call_module("conv", {x});
    bn = graph.call_module("bn", {conv});
    add = graph.call_function("torch.add", {y, bn});
    relu = graph.call_module("relu", {add});
    graph.output(relu);
  }
};

TEST(OnednnConvAdd, GettersPickTheConvAndTheOtherOperand) {
  backend::BackendConfig onednn = backend::get_onednn_backend_config();
  auto pattern = pattern::Pattern::from_nested(
      {"torch.nn.ReLU", {{"torch.add", {"MatchAllNode", {"torch.nn.BatchNorm2d", {"torch.nn.Conv2d"}}}}}});
  const backend::BackendPatternConfig* config = onednn.find(pattern);
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(config->root_node_getter(), "_conv_bn_add_relu_root_node_getter_right");
  ConvAddGraph g;
  pattern::PatternMatch match{&config->pattern(), {g.y, g.conv, g.bn, g.add, g.relu}};
  EXPECT_EQ(backend::root_node_of(*config, match), g.conv);
  EXPECT_EQ(backend::extra_inputs_of(*config, match), std::vector<ir::Argument>{g.y});
  // Without a getter PyTorch's default root would be the other operand.
  EXPECT_EQ(match.node(pattern.default_root_index()), g.conv);  // right: the conv is the last argument
  backend::BackendPatternConfig plain;
  plain.set_pattern(pattern);
  EXPECT_TRUE(backend::extra_inputs_of(plain, match).empty());
}

TEST(OnednnConvAdd, FusersFoldBnAndKeepTheAddOp) {
  auto conv = conv2d();
  auto bn = std::make_shared<torch::nn::BatchNorm2dImpl>(3);
  auto relu = std::make_shared<torch::nn::ReLUImpl>();
  bn->running_mean.uniform_(-1, 1);
  bn->running_var.uniform_(0.5, 2);
  conv->eval();
  bn->eval();
  relu->eval();
  std::vector<FuserPart> parts = {{nullptr, "MatchAllNode"},
                                  {conv, "torch.nn.Conv2d"},
                                  {bn, "torch.nn.BatchNorm2d"},
                                  {nullptr, "operator.add"},
                                  {relu, "torch.nn.ReLU"}};
  const auto& fuser = *backend::BackendRegistry::instance().fuser_method("_fuse_conv_bn_add_relu_right");
  auto fused = fuser(false, parts);
  auto& m = dynamic_cast<FusedModuleImpl&>(*fused);
  EXPECT_EQ(ir::module_type_name(m), "torch.ao.nn.intrinsic.ConvAddReLU2d");
  EXPECT_EQ(m.add_op(), "operator.add");
  at::Tensor x = torch::randn({1, 2, 5, 5});
  at::Tensor y = torch::randn({1, 3, 5, 5});
  at::Tensor expected = at::relu(bn->forward(conv->forward(x)) + y);
  EXPECT_LE(test::max_relative_error(run(m, {x, y}), expected), 1e-5);
  EXPECT_NE(error_of([&] { fuser(true, parts); }).find("Cannot fuse train modules"), std::string::npos);
}

TEST(BatchNormFolding, ChecksModes) {
  auto conv = conv2d();
  auto bn = std::make_shared<torch::nn::BatchNorm2dImpl>(3);
  EXPECT_NE(error_of([&] { fuse_conv_bn_eval(*conv, *bn); }).find("Fusion only for eval!"), std::string::npos);
  conv->eval();
  EXPECT_NE(error_of([&] { fuse_conv_bn(false, conv, bn); }).find("Conv and BN both must be in the same mode"),
            std::string::npos);
  auto wrong_bn = std::make_shared<torch::nn::BatchNorm2dImpl>(5);
  conv->train();
  EXPECT_NE(error_of([&] { fuse_conv_bn(true, conv, wrong_bn); }).find("Output channel of Conv must match"),
            std::string::npos);
}

}  // namespace
}  // namespace qfx::nn
