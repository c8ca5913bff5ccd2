// Lowering leaves in reference form an op whose float value another node
// reads besides its quantize node (torchvision's swin_t: the patch
// embedding's LayerNorm feeds a float LayerNorm and, through an observer, a
// quantized residual add). PyTorch 1.13 lowers it all the same and the float
// reader gets a quantized tensor (docs/divergences.md).

#include "qfx/backend/builtin_backends.h"
#include "qfx/ir/graph_module.h"
#include "qfx/ir/interpreter.h"
#include "qfx/quant/qconfig_mapping.h"
#include "qfx/quantize.h"
#include "support/fixtures.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

namespace qfx {
namespace {

/// x -> linear -> norm -> (inner, norm + inner), inner a LayerNorm the mapping leaves float.
std::unique_ptr<ir::GraphModule> norm_read_twice() {
  auto gm = std::make_unique<ir::GraphModule>();
  ir::Graph& g = gm->graph();
  gm->add_submodule("linear", torch::nn::Linear(6, 6).ptr());
  gm->add_submodule("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({6})).ptr());
  gm->add_submodule("inner", torch::nn::LayerNorm(torch::nn::LayerNormOptions({6})).ptr());
  ir::Node* linear = g.call_module("linear", {g.placeholder("x")});
  ir::Node* norm = g.call_module("norm", {linear});
  ir::Node* inner = g.call_module("inner", {norm});
  g.output(g.call_function("operator.add", {norm, inner}));
  gm->root().eval();
  return gm;
}

TEST(LowerToNative, AnOpWhoseFloatValueAnotherNodeReadsStaysReference) {
  test::EngineGuard engine("qnnpack");
  at::manual_seed(0);
  at::Tensor x = at::randn({4, 6});
  auto gm = norm_read_twice();
  quant::QConfigMapping mapping = quant::get_default_qconfig_mapping("qnnpack");
  mapping.set_module_name("inner", std::nullopt);
  auto backend = backend::get_qnnpack_backend_config();
  prepare_fx(*gm, mapping, backend);
  ir::Interpreter(*gm).run({x});
  auto reference = gm->deep_copy();
  convert_to_reference_fx(*reference, backend);
  convert_fx(*gm, backend);
  std::string code = gm->code();
  EXPECT_NE(code.find("norm = self.norm(dequantize"), std::string::npos) << code;  // float, on dequantized input
  at::Tensor expected = ir::Interpreter(*reference).run({x}).toTensor();
  at::Tensor lowered = ir::Interpreter(*gm).run({x}).toTensor();
  EXPECT_TRUE(at::allclose(lowered.dequantize(), expected.dequantize(), 0, 1e-2)) << code;
}

}  // namespace
}  // namespace qfx
