// A torch.export archive (.pt2, made by PyTorch 2) and the TorchScript trace
// of the same model and weights (made by PyTorch 1.13) read into the same
// graph: the same code and modules, the same float outputs (those of
// PyTorch 2's ep.module(), within 1e-5), and the same quantized models and
// outputs, static on both engines and dynamic. Fixtures: tests/pt2/.

#include "support/fixtures.h"

#include "qfx/backend/builtin_backends.h"
#include "qfx/io/model_file.h"
#include "qfx/io/pt2_import.h"
#include "qfx/io/tensor_io.h"
#include "qfx/io/torchscript_export.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/interpreter.h"
#include "qfx/ir/module_registry.h"
#include "qfx/quant/qconfig.h"
#include "qfx/quant/qconfig_mapping.h"
#include "qfx/quantize.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace qfx {
namespace {

/// A file of tests/pt2/fixtures; the demo's .pt2 is examples/fashion_mnist/fashion_cnn.pt2.
std::string pt2_fixture(const std::string& name) {
  if (name == "fashion_cnn.pt2") return test::source_file("examples/fashion_mnist/fashion_cnn.pt2");
  return test::source_file("tests/pt2/fixtures/" + name);
}

enum class Flow { kStaticOnednn, kStaticQnnpack, kReference, kDynamic };

/// `gm` quantized by `flow` (calibrated on `x`), then run on `x`.
at::Tensor quantized_output(ir::GraphModule& gm, const at::Tensor& x, Flow flow) {
  const char* engine = flow == Flow::kStaticQnnpack ? "qnnpack" : "onednn";
  test::EngineGuard guard(engine);
  quant::QConfigMapping mapping =
      flow == Flow::kDynamic ? quant::QConfigMapping().set_global(*quant::qconfig_preset("default_dynamic_qconfig"))
                             : quant::get_default_qconfig_mapping(engine);
  auto backend =
      flow == Flow::kStaticQnnpack ? backend::get_qnnpack_backend_config() : backend::get_native_backend_config();
  prepare_fx(gm, mapping, backend);
  ir::Interpreter(gm).run({x});
  if (flow == Flow::kReference) {
    convert_to_reference_fx(gm, backend);
  } else {
    convert_fx(gm, backend);
  }
  return ir::Interpreter(gm).run({x}).toTensor();
}

class OraclePt2 : public ::testing::TestWithParam<std::string> {};

TEST_P(OraclePt2, ReadsAsTheTorchScriptTrace) {
  torch::NoGradGuard no_grad;
  auto io = io::load_value(pt2_fixture(GetParam() + ".io.pt")).toTuple();
  at::Tensor x = io->elements().at(0).toTensor(), expected = io->elements().at(1).toTensor();
  auto pt2 = io::load_model(pt2_fixture(GetParam() + ".pt2"));
  auto ts = io::import_torchscript(test::fixture("pt2_" + GetParam() + ".pt"));
  EXPECT_EQ(pt2->code(), ts->code());
  EXPECT_EQ(pt2->to_string(), ts->to_string());
  at::Tensor out = ir::Interpreter(*pt2).run({x}).toTensor();
  EXPECT_TRUE(at::equal(out, ir::Interpreter(*ts).run({x}).toTensor()));
  EXPECT_LE(test::max_relative_error(out, expected), 1e-5);
  for (Flow flow : {Flow::kStaticOnednn, Flow::kStaticQnnpack, Flow::kReference, Flow::kDynamic}) {
    auto pt2_copy = pt2->deep_copy(), ts_copy = ts->deep_copy();
    at::Tensor q_pt2 = quantized_output(*pt2_copy, x, flow), q_ts = quantized_output(*ts_copy, x, flow);
    EXPECT_TRUE(at::equal(q_pt2, q_ts)) << static_cast<int>(flow);
    EXPECT_EQ(pt2_copy->code(), ts_copy->code()) << static_cast<int>(flow);
    EXPECT_EQ(pt2_copy->to_string(), ts_copy->to_string()) << static_cast<int>(flow);
  }
}

TEST_P(OraclePt2, KeepsTheDynamicBatch) {
  torch::NoGradGuard no_grad;
  auto io = io::load_value(pt2_fixture(GetParam() + ".io.pt")).toTuple();
  at::Tensor x = io->elements().at(0).toTensor();
  auto pt2 = io::import_pt2(pt2_fixture(GetParam() + ".pt2"));
  at::Tensor wider = at::cat({x, x.flip(0), x}, 0);
  at::Tensor out = ir::Interpreter(*pt2).run({wider}).toTensor();
  at::Tensor one = ir::Interpreter(*pt2).run({x}).toTensor();
  EXPECT_EQ(out.size(0), 3 * x.size(0));
  EXPECT_LE(test::max_relative_error(out.narrow(0, 0, x.size(0)), one), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Models, OraclePt2, ::testing::Values("fashion_cnn", "residual", "mlp", "lstm", "upsample"));

// The flat layout torch.export.save wrote up to PyTorch 2.7, in its 2.6/2.7 form (schema 8): the
// same program as the 2.8+ archive, read into the same graph, quantized to the same outputs.
class OraclePt2Flat : public ::testing::TestWithParam<std::string> {};

TEST_P(OraclePt2Flat, ReadsAsThePt2Archive) {
  torch::NoGradGuard no_grad;
  auto io = io::load_value(pt2_fixture(GetParam() + ".io.pt")).toTuple();
  at::Tensor x = io->elements().at(0).toTensor();
  auto flat = io::load_model(pt2_fixture(GetParam() + ".flat.pt2"));
  auto archive = io::load_model(pt2_fixture(GetParam() + ".pt2"));
  EXPECT_EQ(flat->code(), archive->code());
  EXPECT_EQ(flat->to_string(), archive->to_string());
  EXPECT_TRUE(at::equal(ir::Interpreter(*flat).run({x}).toTensor(), ir::Interpreter(*archive).run({x}).toTensor()));
  EXPECT_TRUE(
      at::equal(quantized_output(*flat, x, Flow::kStaticQnnpack), quantized_output(*archive, x, Flow::kStaticQnnpack)));
}

INSTANTIATE_TEST_SUITE_P(Models, OraclePt2Flat, ::testing::Values("residual", "lstm"));

// A file PyTorch 2.4 or 2.5 wrote (flat layout, schema 5.3 or 7, strict export; its inference
// BatchNorm as _native_batch_norm_legit_no_training, torch.flatten as a view of the batch size,
// 2.4's state dict an OrderedDict with its _metadata) from the weights of NAME.pt2: its own
// ep.module() outputs within 1e-5 with a dynamic batch, and the same code, modules and quantized
// outputs as the 2.8+ archive.
struct LegacyFile {
  const char* model;
  const char* version;  ///< "pt25": NAME.pt25.pt2
};

class OraclePt2Legacy : public ::testing::TestWithParam<LegacyFile> {};

TEST_P(OraclePt2Legacy, ReadsTheFlatFileOfAnOlderPyTorch) {
  torch::NoGradGuard no_grad;
  const std::string name = std::string(GetParam().model) + "." + GetParam().version;
  auto io = io::load_value(pt2_fixture(name + ".io.pt")).toTuple();
  at::Tensor x = io->elements().at(0).toTensor(), expected = io->elements().at(1).toTensor();
  auto legacy = io::load_model(pt2_fixture(name + ".pt2"));
  auto archive = io::load_model(pt2_fixture(std::string(GetParam().model) + ".pt2"));
  EXPECT_EQ(legacy->to_string(), archive->to_string());
  EXPECT_EQ(ir::module_repr(legacy->root()), ir::module_repr(archive->root()));
  EXPECT_LE(test::max_relative_error(ir::Interpreter(*legacy).run({x}).toTensor(), expected), 1e-5);
  at::Tensor wider = at::cat({x, x.flip(0)}, 0);
  EXPECT_LE(
      test::max_relative_error(ir::Interpreter(*legacy).run({wider}).toTensor().narrow(0, 0, x.size(0)), expected),
      1e-5);
  for (Flow flow : {Flow::kStaticOnednn, Flow::kStaticQnnpack, Flow::kReference, Flow::kDynamic}) {
    auto legacy_copy = legacy->deep_copy(), archive_copy = archive->deep_copy();
    EXPECT_TRUE(at::equal(quantized_output(*legacy_copy, x, flow), quantized_output(*archive_copy, x, flow)))
        << static_cast<int>(flow);
  }
}

INSTANTIATE_TEST_SUITE_P(Files, OraclePt2Legacy,
                         ::testing::Values(LegacyFile{"residual", "pt24"}, LegacyFile{"mlp", "pt24"},
                                           LegacyFile{"residual", "pt25"}, LegacyFile{"mlp", "pt25"}),
                         [](const auto& info) { return std::string(info.param.model) + "_" + info.param.version; });

// PyTorch 2's F.scaled_dot_product_attention, which LibTorch 1.13 lacks, read as its math (docs/pt2.md).
TEST(OraclePt2Only, AttentionRunsAsEpModule) {
  torch::NoGradGuard no_grad;
  auto io = io::load_value(pt2_fixture("attention.io.pt")).toTuple();
  at::Tensor x = io->elements().at(0).toTensor(), expected = io->elements().at(1).toTensor();
  auto gm = io::import_pt2(pt2_fixture("attention.pt2"));
  EXPECT_LE(test::max_relative_error(ir::Interpreter(*gm).run({x}).toTensor(), expected), 1e-5);
  at::Tensor wider = at::cat({x, x}, 0);
  EXPECT_LE(test::max_relative_error(ir::Interpreter(*gm).run({wider}).toTensor(), at::cat({expected, expected}, 0)),
            1e-5);
}

// An int64 arange of positions (GPT-2's, shifted by + 0), a mask built by slice assignments
// (Swin's) and a reshape by a product of sizes: the product is FX's operator.mul on x.size(0); the positions are
// neither observed nor quantized (1.13 would observe them and fail when the model runs), the assignments read as FX's
// operator.setitem, and the int8 file qfx writes runs in LibTorch.
TEST(OraclePt2Only, PositionsAndAssignments) {
  torch::NoGradGuard no_grad;
  auto io = io::load_value(pt2_fixture("positions.io.pt")).toTuple();
  at::Tensor x = io->elements().at(0).toTensor(), expected = io->elements().at(1).toTensor();
  auto gm = io::import_pt2(pt2_fixture("positions.pt2"));
  std::string code = gm->code();
  EXPECT_NE(code.find("new_zeros[(slice(None, 3, None), slice(3, None, None))] = 1.0;  setitem = new_zeros"),
            std::string::npos)
      << code;
  EXPECT_NE(code.find("setitem[(slice(3, None, None), slice(None, 3, None))] = 2.0;  setitem_1 = setitem"),
            std::string::npos)
      << code;
  EXPECT_NE(code.find("mul = size * 6\n"), std::string::npos) << code;  // arithmetic on the dynamic batch
  EXPECT_LE(test::max_relative_error(ir::Interpreter(*gm).run({x}).toTensor(), expected), 1e-5);
  at::Tensor wider = ir::Interpreter(*gm).run({at::cat({x, x}, 0)}).toTensor();
  EXPECT_LE(test::max_relative_error(wider, at::cat({expected, expected}, 0)), 1e-5);
  test::EngineGuard guard("qnnpack");
  prepare_fx(*gm, quant::get_default_qconfig_mapping("qnnpack"), backend::get_qnnpack_backend_config());
  std::string prepared = gm->code();
  EXPECT_NE(prepared.find("add = arange + 0;  arange = None\n"), std::string::npos) << prepared;  // not observed
  EXPECT_NE(prepared.find("pos = self.pos(add)"), std::string::npos) << prepared;
  ir::Interpreter(*gm).run({x});
  convert_fx(*gm, backend::get_qnnpack_backend_config());
  at::Tensor quantized = ir::Interpreter(*gm).run({x}).toTensor();
  EXPECT_LE(test::max_relative_error(quantized, expected), 0.05);
  std::string path = ::testing::TempDir() + "qfx_positions_int8.pt";
  io::export_torchscript(*gm, path);
  EXPECT_TRUE(at::equal(torch::jit::load(path).forward({x}).toTensor(), quantized));
}

}  // namespace
}  // namespace qfx
