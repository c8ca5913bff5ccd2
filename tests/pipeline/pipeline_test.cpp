// The library pipeline (qfx/pipeline.h) gives what its steps give by hand:
// the demo's .pt2 quantized by quantize_model equals import_pt2, prepare_fx,
// calibration and convert_fx; convert_and_export writes a file that runs as
// the converted model does.

#include "qfx/backend/builtin_backends.h"
#include "qfx/io/pt2_import.h"
#include "qfx/ir/interpreter.h"
#include "qfx/pipeline.h"
#include "qfx/quantize.h"
#include "support/fixtures.h"

#include <gtest/gtest.h>
#include <torch/script.h>

namespace qfx {
namespace {

std::string demo_pt2() { return test::source_file("examples/fashion_mnist/fashion_cnn.pt2"); }

QuantizeOptions qnnpack_options() {
  QuantizeOptions options;
  options.qconfig_mapping = quant::get_default_qconfig_mapping("qnnpack");
  options.backend_config = backend::get_qnnpack_backend_config();
  return options;
}

std::vector<Batch> random_batches() {
  at::manual_seed(0);
  return {{at::rand({4, 1, 28, 28})}, {at::rand({4, 1, 28, 28})}};
}

TEST(Pipeline, QuantizeModelIsItsSteps) {
  test::EngineGuard engine("qnnpack");
  torch::NoGradGuard no_grad;
  std::vector<Batch> batches = random_batches();
  auto quantized = quantize_model(demo_pt2(), qnnpack_options(), batches_of(batches));

  auto by_hand = io::import_pt2(demo_pt2());
  prepare_fx(*by_hand, quant::get_default_qconfig_mapping("qnnpack"), backend::get_qnnpack_backend_config());
  ir::Interpreter calibrate_by_hand(*by_hand);
  for (const Batch& batch : batches) calibrate_by_hand.run(batch);
  convert_fx(*by_hand, backend::get_qnnpack_backend_config());

  EXPECT_EQ(quantized->code(), by_hand->code());
  at::Tensor x = at::rand({3, 1, 28, 28});
  EXPECT_TRUE(
      at::equal(ir::Interpreter(*quantized).run({x}).toTensor(), ir::Interpreter(*by_hand).run({x}).toTensor()));
}

TEST(Pipeline, ReferenceAndQatOptions) {
  test::EngineGuard engine("qnnpack");
  QuantizeOptions options = qnnpack_options();
  options.reference = true;
  auto reference = quantize_model(demo_pt2(), options, batches_of(random_batches()));
  EXPECT_NE(reference->code().find("quantize_per_tensor"), std::string::npos);
  EXPECT_EQ(reference->code().find("quantized."), std::string::npos);  // no lowered op

  QuantizeOptions qat = qnnpack_options();
  qat.qconfig_mapping = quant::get_default_qat_qconfig_mapping("qnnpack");
  qat.qat = true;
  auto model = load_for_quantization(demo_pt2(), qat);
  prepare(*model, qat);
  EXPECT_FALSE(model->root().is_training());  // calibrates in eval mode
  EXPECT_NE(model->to_string().find("FakeQuantize"), std::string::npos);
}

/// Two labelled batches of the demo's input shape, the same at every epoch.
LabelledBatches fixed_labelled_batches(bool with_labels) {
  std::vector<Batch> inputs = random_batches();
  return [inputs, with_labels](int64_t, const std::function<void(const LabelledBatch&)>& each) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      each({inputs[i], with_labels ? at::arange(4, at::kLong) + static_cast<int64_t>(i) : at::Tensor()});
    }
  };
}

TEST(Pipeline, TrainFitsThePreparedQatModelAndLeavesItInEvalMode) {
  test::EngineGuard engine("qnnpack");
  QuantizeOptions qat = qnnpack_options();
  qat.qconfig_mapping = quant::get_default_qat_qconfig_mapping("qnnpack");
  qat.qat = true;
  auto model = load_for_quantization(demo_pt2(), qat);
  prepare(*model, qat);
  at::Tensor weight_before = model->root().parameters()[0].clone();
  std::vector<double> losses;
  TrainOptions options;
  options.epochs = 4;
  options.lr = 1e-3;
  train(*model, fixed_labelled_batches(true), options, nullptr,
        [&](int64_t epoch, double loss) { losses.push_back(loss); });
  ASSERT_EQ(losses.size(), 4u);
  EXPECT_LT(losses.back(), losses.front()) << "eight samples, four epochs of Adam at 1e-3";
  EXPECT_FALSE(at::equal(model->root().parameters()[0], weight_before));
  EXPECT_FALSE(model->root().is_training());

  std::string error = test::error_of([&] { train(*model, fixed_labelled_batches(false), options); });
  EXPECT_NE(error.find("no labels"), std::string::npos) << error;
  options.lr = 0;
  error = test::error_of([&] { train(*model, fixed_labelled_batches(true), options); });
  EXPECT_NE(error.find("learning rate must be positive"), std::string::npos) << error;
}

TEST(Pipeline, ConvertAndExportKeepsAFileThatRuns) {
  test::EngineGuard engine("qnnpack");
  torch::NoGradGuard no_grad;
  std::vector<Batch> batches = random_batches();
  QuantizeOptions options = qnnpack_options();
  auto model = load_for_quantization(demo_pt2(), options);
  prepare(*model, options);
  calibrate(*model, batches_of(batches));
  ExportOptions how;
  how.path = ::testing::TempDir() + "qfx_pipeline_int8.pt";
  how.check = batches[0];
  Exported written = convert_and_export(*model, options, how);
  EXPECT_GE(written.convert_s, 0.0);
  at::Tensor x = at::rand({2, 1, 28, 28});
  EXPECT_TRUE(at::equal(torch::jit::load(how.path).forward({x}).toTensor(),
                        ir::Interpreter(*written.model).run({x}).toTensor()));
}

}  // namespace
}  // namespace qfx
