// PyTorch's inference fast paths (a TransformerEncoderLayer or
// MultiheadAttention traced under torch.no_grad() in eval mode records one
// fused op) import as the slow path's trace of the same weights does: the
// same graph, the same float outputs (those of PyTorch's eval forward), and
// the same static and dynamic quantized models. FX keeps both containers
// whole, so the oracle here is the slow path and the float model.

#include "support/fixtures.h"

#include "qfx/backend/builtin_backends.h"
#include "qfx/io/tensor_io.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/interpreter.h"
#include "qfx/quant/qconfig.h"
#include "qfx/quant/qconfig_mapping.h"
#include "qfx/quantize.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace qfx {
namespace {

/// `gm` quantized: statically (calibrated on `x`) or dynamically, then run on `x`.
at::Tensor quantized_output(ir::GraphModule& gm, const at::Tensor& x, bool dynamic) {
  quant::QConfigMapping mapping =
      dynamic ? quant::QConfigMapping().set_global(*quant::qconfig_preset("default_dynamic_qconfig"))
              : quant::get_default_qconfig_mapping("onednn");
  prepare_fx(gm, mapping, backend::get_native_backend_config());
  ir::Interpreter(gm).run({x});
  convert_fx(gm, backend::get_native_backend_config());
  return ir::Interpreter(gm).run({x}).toTensor();
}

class OracleFastPath : public ::testing::TestWithParam<std::string> {};

TEST_P(OracleFastPath, ImportsAsTheSlowPath) {
  torch::NoGradGuard no_grad;
  test::EngineGuard engine("onednn");
  std::string base = "fast_path_" + GetParam();
  at::Tensor x = io::load_value(test::fixture(base + ".input.pt")).toTensor();
  at::Tensor expected = io::load_value(test::fixture(base + ".output.pt")).toTensor();
  auto fast = io::import_torchscript(test::fixture(base + "_fast.pt"));
  auto slow = io::import_torchscript(test::fixture(base + "_slow.pt"));
  EXPECT_EQ(fast->code(), slow->code());
  at::Tensor fast_out = ir::Interpreter(*fast).run({x}).toTensor();
  EXPECT_TRUE(at::equal(fast_out, ir::Interpreter(*slow).run({x}).toTensor()));
  EXPECT_LE(test::max_relative_error(fast_out, expected), 1e-5);
  for (bool dynamic : {false, true}) {
    auto fast_copy = fast->deep_copy(), slow_copy = slow->deep_copy();
    at::Tensor q_fast = quantized_output(*fast_copy, x, dynamic), q_slow = quantized_output(*slow_copy, x, dynamic);
    EXPECT_TRUE(at::equal(q_fast, q_slow)) << (dynamic ? "dynamic" : "static");
    EXPECT_EQ(fast_copy->code(), slow_copy->code()) << (dynamic ? "dynamic" : "static");
  }
}

INSTANTIATE_TEST_SUITE_P(Models, OracleFastPath, ::testing::Values("encoder", "encoder_norm_first_gelu", "attention"));

}  // namespace
}  // namespace qfx
