// The average pools qnnpack gets wrong (count_include_pad=False,
// divisor_override) and InstanceNorm with running stats
// (ir/kernel_workarounds.h): a model of each form, quantized with the
// engine's default QConfigMapping, lowered and compared op by op with its
// reference model on the same quantized inputs (accuracy/kernel_gaps.h), in
// the interpreter and in the exported file. With the workarounds off the
// same comparison sees the faults.

#include "qfx/accuracy/kernel_gaps.h"
#include "qfx/io/torchscript_export.h"
#include "qfx/ir/graph_module.h"
#include "qfx/ir/interpreter.h"
#include "qfx/ir/parser.h"
#include "qfx/quant/qconfig_mapping.h"
#include "qfx/quantize.h"
#include "support/fixtures.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/nn/modules/instancenorm.h>
#include <torch/nn/modules/pooling.h>
#include <torch/script.h>

#include <map>

namespace qfx {
namespace {

std::unique_ptr<ir::GraphModule> pools_and_norm_model() {
  torch::NoGradGuard no_grad;
  at::manual_seed(4);
  auto gm = std::make_unique<ir::GraphModule>(ir::make_container_module(), ir::parse_graph(R"(graph():
    %x : [num_users=4] = placeholder[target=x]
    %pool_cip : [num_users=1] = call_function[target=torch.nn.functional.avg_pool2d](args = (%x, 3, 2, 1), kwargs = {count_include_pad: False})
    %pool_div : [num_users=1] = call_module[target=pool_div](args = (%x,), kwargs = {})
    %rows : [num_users=1] = call_method[target=flatten](args = (%x, 1, 2), kwargs = {})
    %pool_1d : [num_users=1] = call_module[target=pool_1d](args = (%rows,), kwargs = {})
    %norm : [num_users=1] = call_module[target=norm](args = (%x,), kwargs = {})
    return (pool_cip, pool_div, pool_1d, norm))"));
  using namespace torch::nn;
  gm->add_submodule("pool_div", AvgPool2d(AvgPool2dOptions(3).stride(2).padding(1).divisor_override(4)).ptr());
  gm->add_submodule("pool_1d", AvgPool1d(AvgPool1dOptions(3).stride(2).padding(1).count_include_pad(false)).ptr());
  InstanceNorm2d norm(InstanceNorm2dOptions(8).affine(true).track_running_stats(true));
  norm->running_mean.normal_(0, 0.5);
  norm->running_var.uniform_(0.5, 1.5);
  norm->weight.uniform_(0.5, 1.5);
  gm->add_submodule("norm", norm.ptr());
  gm->root().eval();
  return gm;
}

/// The model calibrated on `x`, converted to its reference and lowered models.
struct PoolNormModels {
  std::unique_ptr<ir::GraphModule> reference, lowered;
};

PoolNormModels convert_pool_norm(const std::string& engine, const at::Tensor& x) {
  auto calibrated = pools_and_norm_model();
  prepare_fx(*calibrated, quant::get_default_qconfig_mapping(engine));
  ir::Interpreter(*calibrated).run({x});
  PoolNormModels out{calibrated->deep_copy(), calibrated->deep_copy()};
  convert_to_reference_fx(*out.reference);
  convert_fx(*out.lowered);
  return out;
}

/// Each op's gap from its reference, in steps, by node.
std::map<std::string, int64_t> pool_norm_gaps(const PoolNormModels& m, const at::Tensor& x) {
  std::map<std::string, int64_t> out;
  for (const KernelGap& gap : kernel_gaps(*m.reference, *m.lowered, {{x}})) out[gap.node] = gap.steps;
  return out;
}

at::Tensor pool_norm_input() {
  at::manual_seed(5);
  return at::randn({2, 8, 7, 9}) * 3;
}

const std::vector<std::string> kPoolNormOps = {"pool_cip", "pool_div", "pool_1d", "norm"};

TEST(PoolNormWorkarounds, EveryOpIsWithinRoundingOfItsReference) {
  for (const char* engine : {"qnnpack", "onednn"}) {
    test::EngineGuard guard(engine);
    std::map<std::string, int64_t> found =
        pool_norm_gaps(convert_pool_norm(engine, pool_norm_input()), pool_norm_input());
    for (const std::string& op : kPoolNormOps) {
      ASSERT_TRUE(found.count(op)) << engine << ": no gap measured for " << op;
      EXPECT_LE(found[op], 1) << engine << ": " << op;
    }
  }
}

TEST(PoolNormWorkarounds, TheExportedFileComputesAsTheInterpreter) {
  test::EngineGuard guard("qnnpack");
  PoolNormModels m = convert_pool_norm("qnnpack", pool_norm_input());
  std::string path = ::testing::TempDir() + "qfx_pool_norm.pt";
  io::export_torchscript(*m.lowered, path);
  c10::IValue interpreted = ir::Interpreter(*m.lowered).run({pool_norm_input()});
  c10::IValue loaded = torch::jit::load(path).forward({pool_norm_input()});
  const auto& ours = interpreted.toTupleRef().elements();
  const auto& theirs = loaded.toTupleRef().elements();
  ASSERT_EQ(ours.size(), theirs.size());
  for (size_t i = 0; i < ours.size(); ++i)
    EXPECT_TRUE(ours[i].toTensor().equal(theirs[i].toTensor())) << kPoolNormOps[i];
  EXPECT_NE(io::torchscript_source(*m.lowered).find("narrow"), std::string::npos);
}

// The checks above can fail: LibTorch's pools on qnnpack and PyTorch 1.13's
// quantized InstanceNorm on both engines are far from the reference.
TEST(PoolNormWorkarounds, WithoutThemThePoolsAndTheNormAreWrong) {
  test::KernelWorkaroundsOff off;
  for (const char* engine : {"qnnpack", "onednn"}) {
    test::EngineGuard guard(engine);
    std::map<std::string, int64_t> found =
        pool_norm_gaps(convert_pool_norm(engine, pool_norm_input()), pool_norm_input());
    EXPECT_GT(found["norm"], 10) << engine;
    for (const char* pool : {"pool_cip", "pool_div", "pool_1d"})
      if (std::string(engine) == "qnnpack")
        EXPECT_GT(found[pool], 10) << pool;
      else
        EXPECT_LE(found[pool], 1) << engine << ": " << pool;
  }
}

}  // namespace
}  // namespace qfx
