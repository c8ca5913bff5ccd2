// prepare_qat_fx against PyTorch 1.13: the same nodes and module tree, the
// same losses over SGD steps from the same weights and data (<= 1e-4), the
// same fake-quantize qparams after training, and convert_fx gives the same
// quantized model (module tree with its scales and zero points, code) with
// outputs within one output quantization step.

#include "support/fixtures.h"
#include "support/graph_rows.h"

#include "qfx/backend/builtin_backends.h"
#include "qfx/io/tensor_io.h"
#include "qfx/io/torchscript_export.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/interpreter.h"
#include "qfx/ir/module_registry.h"
#include "qfx/nn/qat.h"
#include "qfx/quant/fake_quantize.h"
#include "qfx/quant/observer_base.h"
#include "qfx/quant/qconfig_json.h"
#include "qfx/quantize.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace qfx {
namespace {

std::string tree_of(const ir::GraphModule& gm) {
  std::string tree = gm.to_string();
  return tree.substr(0, tree.size() - gm.code().size() - 1);
}

class OracleQat : public ::testing::TestWithParam<std::string> {};

TEST_P(OracleQat, TrainsAndConvertsAsPyTorch) {
  nlohmann::json record = test::fixture_case("qat.json", GetParam());
  auto gm = io::import_torchscript(test::fixture(record["model"]));
  backend::BackendConfig backend = backend::get_native_backend_config();
  prepare_qat_fx(*gm, quant::qconfig_mapping_from_json(record["qconfig_mapping"]), backend);
  std::vector<std::string> ours = test::node_rows(gm->graph()), theirs = test::node_rows(record["prepared"]);
  EXPECT_EQ(ours, theirs) << test::first_difference(ours, theirs);
  EXPECT_EQ(tree_of(*gm), record["prepared"]["module_tree"].get<std::string>());

  c10::IValue data = io::load_value(test::fixture(record["data"]));
  at::Tensor inputs = data.toListRef()[0].toTensor(), targets = data.toListRef()[1].toTensor();
  torch::optim::SGD sgd(gm->root().parameters(), torch::optim::SGDOptions(record["lr"].get<double>()));
  ir::Interpreter interpreter(*gm);
  const auto& losses = record["losses"];
  for (size_t step = 0; step < losses.size(); ++step) {
    sgd.zero_grad();
    at::Tensor out = interpreter.run({inputs[step]}).toTensor();
    at::Tensor loss = at::mse_loss(out, targets[step]);
    loss.backward();
    sgd.step();
    EXPECT_NEAR(loss.item<double>(), losses[step].get<double>(), 1e-4) << "step " << step;
  }

  torch::NoGradGuard no_grad;
  for (const auto& [path, expected] : record["fake_quants"].items()) {
    auto fq = std::dynamic_pointer_cast<quant::ActivationPostProcess>(gm->get_submodule(path));
    ASSERT_TRUE(fq) << path;
    quant::QParams q = fq->calculate_qparams();
    at::Tensor scale = q.scale.to(at::kDouble).reshape(-1), zero_point = q.zero_point.to(at::kDouble).reshape(-1);
    for (size_t i = 0; i < expected["scale"].size(); ++i) {
      EXPECT_NEAR(scale[i].item<double>(), test::from_hex(expected["scale"][i]), 1e-6 * scale[i].item<double>())
          << path;
      EXPECT_EQ(zero_point[i].item<double>(), test::from_hex(expected["zero_point"][i])) << path;
    }
  }

  // a QAT-prepared model exports with its fake quantization (observers off)
  for (const auto& m : gm->root().modules()) {
    if (auto* fq = dynamic_cast<quant::FakeQuantizeBase*>(m.get())) fq->enable_observer(false);
  }
  gm->root().train(false);
  std::string exported = ::testing::TempDir() + "qfx_qat_export_test.pt";
  io::export_torchscript(*gm, exported);
  torch::jit::Module module = torch::jit::load(exported);
  c10::IValue interpreted = ir::Interpreter(*gm).run({inputs[0]});
  EXPECT_EQ(test::max_abs_error(module.forward({inputs[0]}), interpreted), 0.0);
  test::keep_for_python("qat_" + GetParam() + "_trained", exported, {inputs[0]}, interpreted, 0.0, false, "onednn");
  for (const auto& m : gm->root().modules()) {
    if (auto* fq = dynamic_cast<quant::FakeQuantizeBase*>(m.get())) fq->enable_observer(true);
  }

  at::globalContext().setQEngine(at::QEngine::ONEDNN);
  convert_fx(*gm, backend);
  const nlohmann::json& lowered = record["lowered"];
  EXPECT_EQ(gm->code(), lowered["code"].get<std::string>());
  EXPECT_EQ(tree_of(*gm), lowered["module_tree"].get<std::string>());
  c10::IValue expected = io::load_value(test::fixture(lowered["output"]));
  c10::IValue output = ir::Interpreter(*gm).run({inputs[0]});
  double step = lowered["output_step"].get<double>();
  EXPECT_LE(test::max_abs_error(output, expected), step * (1 + 1e-6)) << "one output step: " << step;
}

INSTANTIATE_TEST_SUITE_P(Cases, OracleQat, ::testing::Values("conv_bn_linear", "embedding"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(QatModules, FreezeBnStatsKeepsRunningStatistics) {
  auto conv = std::make_shared<torch::nn::Conv2dImpl>(torch::nn::Conv2dOptions(2, 3, 1));
  auto bn = std::make_shared<torch::nn::BatchNorm2dImpl>(3);
  auto relu = std::make_shared<torch::nn::ReLUImpl>();
  auto fused = nn::make_fused_module(nn::FusedKind::kConvBnReLU2d, {conv, bn, relu});
  fused->train(true);
  auto qconfig = *quant::qconfig_preset("default_qat_qconfig");
  auto qat = nn::qat_from_float("torch.ao.nn.intrinsic.qat.ConvBnReLU2d", fused, qconfig);
  at::Tensor x = torch::randn({4, 2, 5, 5});
  qat->forward(x);
  at::Tensor mean = bn->running_mean.clone();
  EXPECT_FALSE(mean.equal(torch::zeros({3})));  // training updates the statistics
  qat->freeze_bn_stats();
  qat->train(true);  // a frozen batch norm stays in eval mode
  EXPECT_FALSE(bn->is_training());
  qat->forward(x);
  EXPECT_TRUE(bn->running_mean.equal(mean));
  qat->update_bn_stats();
  qat->forward(x);
  EXPECT_FALSE(bn->running_mean.equal(mean));
  EXPECT_EQ(ir::module_type_name(*qat->to_float()), "torch.ao.nn.intrinsic.ConvReLU2d");
}

}  // namespace
}  // namespace qfx
