// quantized_from_float against PyTorch 1.13's eager-mode from_float:
// Linear (per-channel weight), Conv2d (per-tensor), ConvReLU2d, BatchNorm2d
// and dynamic Linear built from the same float modules with the same
// qconfigs and output qparams compute the same quantized outputs (integer
// values equal; dynamic: floats within 1e-6).

#include "support/fixtures.h"

#include "qfx/io/tensor_io.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/nn/intrinsic.h"
#include "qfx/nn/quantized.h"
#include "qfx/quant/qconfig_json.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>

namespace qfx {
namespace {

TEST(OracleFromFloat, QuantizedModulesMatchPyTorch) {
  nlohmann::json record = test::fixture_json("from_float.json");
  auto gm = io::import_torchscript(test::fixture(record["model"]));
  std::vector<c10::IValue> inputs = io::as_inputs(io::load_value(test::fixture(record["inputs"])), "inputs");
  at::globalContext().setQEngine(at::QEngine::ONEDNN);
  ASSERT_EQ(record["cases"].size(), 5u);
  for (const nlohmann::json& c : record["cases"]) {
    std::string path = c["path"];
    quant::QConfigAny qconfig = quant::qconfig_from_json(c["qconfig"], path);
    ASSERT_TRUE(qconfig.has_value()) << path;
    at::Tensor x = inputs.at(c["input"].get<size_t>()).toTensor();
    at::Tensor expected = io::load_value(test::fixture(c["output"])).toTensor();
    std::optional<nn::OutputQParams> output;
    if (c.contains("output_qparams")) {
      output = nn::OutputQParams{test::from_hex(c["output_qparams"][0]), c["output_qparams"][1].get<int64_t>()};
      x = at::quantize_per_tensor(x, test::from_hex(c["input_qparams"][0]), c["input_qparams"][1].get<int64_t>(),
                                  at::kQUInt8);
    }
    std::shared_ptr<torch::nn::Module> float_module;
    if (c["parts"].empty()) {
      float_module = gm->get_submodule(path);
    } else {  // ConvReLU2d of two imported modules
      float_module = nn::make_fused_module(nn::FusedKind::kConvReLU2d,
                                           {gm->get_submodule(c["parts"][0]), gm->get_submodule(c["parts"][1])});
    }
    auto quantized = nn::quantized_from_float(c["quantized_type"], float_module, *qconfig, output);
    std::vector<c10::IValue> args{x};
    at::Tensor ours = quantized->forward(args).toTensor();
    if (output) {
      EXPECT_TRUE(ours.int_repr().equal(expected)) << path;
      EXPECT_EQ(ours.q_scale(), output->scale) << path;
    } else {
      EXPECT_LE((ours - expected).abs().max().item<double>(), 1e-6) << path;
    }
  }
}

}  // namespace
}  // namespace qfx
