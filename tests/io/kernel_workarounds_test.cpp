// The clamp family on qnnpack (ir/kernel_workarounds.h): every form a graph
// can hold it in — F.relu6, F.hardtanh (in place too), torch.clamp,
// Tensor.clamp, nn.ReLU6, nn.Hardtanh (in place too) — run by the
// interpreter and by the exported file in torch::jit, on quantized tensors of
// every memory order a network gives them, against the reference: the float
// op on the dequantized input, quantized with the input's qparams. With the
// workarounds off the same checks see LibTorch's wrong kernel.

#include "qfx/io/torchscript_export.h"
#include "qfx/ir/graph_module.h"
#include "qfx/ir/interpreter.h"
#include "qfx/ir/kernel_workarounds.h"
#include "qfx/ir/parser.h"
#include "support/fixtures.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/activation.h>
#include <torch/script.h>

namespace qfx {
namespace {

std::unique_ptr<ir::GraphModule> clamp_family_model() {
  auto gm = std::make_unique<ir::GraphModule>(ir::make_container_module(), ir::parse_graph(R"(graph():
    %x : [num_users=8] = placeholder[target=x]
    %relu6 : [num_users=1] = call_function[target=torch.nn.functional.relu6](args = (%x,), kwargs = {inplace: False})
    %hardtanh : [num_users=1] = call_function[target=torch.nn.functional.hardtanh](args = (%x, -1.0, 2.0), kwargs = {})
    %clamp : [num_users=1] = call_function[target=torch.clamp](args = (%x,), kwargs = {min: -0.5, max: 3.0})
    %clamp_1 : [num_users=1] = call_method[target=clamp](args = (%x, 0.0, 1.5), kwargs = {})
    %act6 : [num_users=1] = call_module[target=act6](args = (%x,), kwargs = {})
    %tanh_like : [num_users=1] = call_module[target=tanh_like](args = (%x,), kwargs = {})
    %clone : [num_users=1] = call_method[target=clone](args = (%x,), kwargs = {})
    %hardtanh_1 : [num_users=1] = call_function[target=torch.nn.functional.hardtanh](args = (%clone, 0.0, 6.0), kwargs = {inplace: True})
    %clone_1 : [num_users=1] = call_method[target=clone](args = (%x,), kwargs = {})
    %inplace6 : [num_users=1] = call_module[target=inplace6](args = (%clone_1,), kwargs = {})
    return (relu6, hardtanh, clamp, clamp_1, act6, tanh_like, hardtanh_1, inplace6))"));
  gm->add_submodule("act6", torch::nn::ReLU6().ptr());
  gm->add_submodule("tanh_like", torch::nn::Hardtanh(torch::nn::HardtanhOptions().min_val(-2.0).max_val(0.5)).ptr());
  gm->add_submodule("inplace6", torch::nn::ReLU6(torch::nn::ReLU6Options(true)).ptr());
  return gm;
}

/// What each output of clamp_family_model should be: the float op on the
/// dequantized input, quantized with the input's qparams.
std::vector<at::Tensor> reference_outputs(const at::Tensor& q) {
  at::Tensor x = q.dequantize();
  std::vector<std::pair<double, double>> ranges = {{0, 6}, {-1, 2},   {-0.5, 3}, {0, 1.5},
                                                   {0, 6}, {-2, 0.5}, {0, 6},    {0, 6}};
  std::vector<at::Tensor> out;
  for (const auto& [lo, hi] : ranges)
    out.push_back(at::quantize_per_tensor(at::clamp(x, lo, hi), q.q_scale(), q.q_zero_point(), q.scalar_type()));
  return out;
}

/// The worst difference, in quantization steps, of `outputs` from the reference.
int64_t worst_steps(const c10::IValue& outputs, const at::Tensor& q) {
  std::vector<at::Tensor> expected = reference_outputs(q);
  const auto& items = outputs.toTupleRef().elements();
  EXPECT_EQ(items.size(), expected.size());
  int64_t worst = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    at::Tensor ours = items[i].toTensor();
    EXPECT_EQ(ours.sizes(), q.sizes()) << "output " << i;
    worst = std::max(worst,
                     (ours.int_repr().to(at::kInt) - expected[i].int_repr().to(at::kInt)).abs().max().item<int64_t>());
  }
  return worst;
}

/// Quantized inputs as networks give them: contiguous, channels_last (every
/// qnnpack convolution's output), channels_last_3d, and ranks 1 to 3.
std::vector<at::Tensor> inputs() {
  at::manual_seed(0);
  auto quantized = [](at::IntArrayRef sizes) {
    return at::quantize_per_tensor(at::randn(sizes) * 4, 0.06, 37, at::kQUInt8);
  };
  return {quantized({2, 16, 7, 9}),
          quantized({2, 16, 7, 9}).contiguous(at::MemoryFormat::ChannelsLast),
          quantized({1, 8, 3, 5, 7}).contiguous(at::MemoryFormat::ChannelsLast3d),
          quantized({2, 5, 11}).transpose(1, 2),
          quantized({3, 40}),
          quantized({29})};
}

TEST(KernelWorkarounds, TheClampFamilyOnQnnpackComputesTheReference) {
  test::EngineGuard engine("qnnpack");
  auto gm = clamp_family_model();
  ir::Interpreter interpreter(*gm);
  for (const at::Tensor& q : inputs()) EXPECT_EQ(worst_steps(interpreter.run({q}), q), 0) << q.sizes();
}

TEST(KernelWorkarounds, TheExportedFileCarriesTheWorkaround) {
  test::EngineGuard engine("qnnpack");
  std::string path = ::testing::TempDir() + "qfx_clamp_family.pt";
  io::export_torchscript(*clamp_family_model(), path);
  torch::jit::Module exported = torch::jit::load(path);
  for (const at::Tensor& q : inputs()) EXPECT_EQ(worst_steps(exported.forward({q}), q), 0) << q.sizes();
}

// The checks above can fail: without the workaround, LibTorch's qnnpack
// kernels are wrong on channels_last, in the interpreter and in the file.
TEST(KernelWorkarounds, WithoutThemQnnpackIsWrongOnChannelsLast) {
  test::EngineGuard engine("qnnpack");
  test::KernelWorkaroundsOff off;
  auto gm = clamp_family_model();
  at::Tensor channels_last = inputs()[1];
  EXPECT_GT(worst_steps(ir::Interpreter(*gm).run({channels_last}), channels_last), 10);
  std::string path = ::testing::TempDir() + "qfx_clamp_family_off.pt";
  io::export_torchscript(*gm, path);
  EXPECT_GT(worst_steps(torch::jit::load(path).forward({channels_last}), channels_last), 10);
}

// On onednn the kernels are right, and the export is the plain op.
TEST(KernelWorkarounds, OnednnNeedsNone) {
  test::EngineGuard engine("onednn");
  auto gm = clamp_family_model();
  for (const at::Tensor& q : inputs()) EXPECT_EQ(worst_steps(ir::Interpreter(*gm).run({q}), q), 0) << q.sizes();
  EXPECT_EQ(io::torchscript_source(*gm).find("transpose"), std::string::npos) << io::torchscript_source(*gm);
}

}  // namespace
}  // namespace qfx
