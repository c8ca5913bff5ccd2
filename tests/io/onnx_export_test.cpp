// ONNX export: the graph each model becomes (op types, initializer types,
// axes, declared shapes), and the errors. Running the models in ONNX Runtime
// is tests/onnx/check_onnx_runtime.js's job.

#include "support/fixtures.h"

#include "qfx/io/onnx_export.h"
#include "qfx/ir/interpreter.h"
#include "qfx/quant/qconfig_mapping.h"
#include "qfx/quantize.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>

namespace qfx {
namespace {

onnx::ModelProto exported(const ir::GraphModule& gm, const at::Tensor& x, int64_t opset = 13) {
  io::OnnxExportOptions options;
  options.opset = opset;
  onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromString(io::onnx_model_bytes(gm, {x}, options)));
  return model;
}

std::vector<std::string> op_types(const onnx::ModelProto& model) {
  std::vector<std::string> out;
  for (const auto& node : model.graph().node()) out.push_back(node.op_type());
  return out;
}

const onnx::TensorProto& initializer(const onnx::ModelProto& model, const std::string& name) {
  for (const auto& t : model.graph().initializer()) {
    if (t.name() == name) return t;
  }
  throw std::runtime_error("no initializer " + name);
}

TEST(OnnxExport, FloatModelIsItsOnnxOps) {
  torch::manual_seed(0);
  auto gm = test::conv_bn_linear();
  onnx::ModelProto model = exported(*gm, torch::randn({2, 2, 4, 4}));
  EXPECT_EQ(op_types(model),
            (std::vector<std::string>{"Conv", "BatchNormalization", "Relu", "Flatten", "Gemm", "Identity"}));
  EXPECT_EQ(model.opset_import(0).version(), 13);
  const auto& input = model.graph().input(0);
  EXPECT_EQ(input.name(), "x");
  EXPECT_EQ(input.type().tensor_type().shape().dim(0).dim_param(), "batch");
  EXPECT_EQ(input.type().tensor_type().shape().dim(3).dim_value(), 4);
  const auto& output = model.graph().output(0);
  EXPECT_EQ(output.name(), "output");
  EXPECT_EQ(output.type().tensor_type().shape().dim(1).dim_value(), 5);  // from ONNX's shape inference
  EXPECT_EQ(initializer(model, "conv_weight").data_type(), onnx::TensorProto::FLOAT);
}

TEST(OnnxExport, ReferenceModelHasInt8WeightsAndInt32Biases) {
  torch::manual_seed(0);
  auto gm = test::conv_bn_linear();
  prepare_fx(*gm, quant::get_default_qconfig_mapping("onednn"));
  ir::Interpreter(*gm).run({torch::randn({4, 2, 4, 4})});
  convert_to_reference_fx(*gm);
  at::Tensor x = torch::randn({2, 2, 4, 4});
  onnx::ModelProto model = exported(*gm, x);
  std::vector<std::string> ops = op_types(model);
  // one QuantizeLinear per quantize node of the reference graph; bn folded into the conv
  int64_t quantize_nodes = 0;
  for (const ir::Node* node : gm->graph().nodes()) quantize_nodes += node->target() == "torch.quantize_per_tensor";
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "QuantizeLinear"), quantize_nodes) << ::testing::PrintToString(ops);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Conv"), 1);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "BatchNormalization"), 0);
  for (const auto& node : model.graph().node()) {
    if (node.op_type() != "Conv" && node.op_type() != "Gemm") continue;
    ASSERT_EQ(node.input_size(), 3) << node.name();
  }
  int int8_weights = 0, int32_biases = 0;
  for (const auto& t : model.graph().initializer()) {
    int8_weights += t.data_type() == onnx::TensorProto::INT8 && t.dims_size() >= 2;
    int32_biases += t.data_type() == onnx::TensorProto::INT32 && t.name().find("_bias_quantized") != std::string::npos;
  }
  EXPECT_EQ(int8_weights, 2);  // conv and fc, not float
  EXPECT_EQ(int32_biases, 2);
  bool per_channel = false;
  for (const auto& node : model.graph().node()) {
    if (node.op_type() != "DequantizeLinear" || node.attribute_size() == 0) continue;
    per_channel |= node.attribute(0).name() == "axis" && node.attribute(0).i() == 0;
  }
  EXPECT_TRUE(per_channel) << "per-channel weights dequantize along axis 0";
}

TEST(OnnxExport, OpWithoutOnnxFormIsAnErrorNamingTheNodeAndNothingIsWritten) {
  auto gm = std::make_unique<ir::GraphModule>();
  ir::Graph& g = gm->graph();
  ir::Node* x = g.placeholder("x");
  g.output(g.call_function("operator.mod", {x, int64_t{3}}));
  std::string path = (std::filesystem::temp_directory_path() / "qfx_onnx_error.onnx").string();
  std::filesystem::remove(path);
  std::string error = test::error_of([&] { io::export_onnx(*gm, {torch::ones({2})}, path); });
  EXPECT_EQ(error, "ONNX export: node %mod (call_function operator.mod): no ONNX form for this op");
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(OnnxExport, OpsetsOutsideTheCheckersAreRefused) {
  auto gm = test::conv_bn_linear();
  EXPECT_NE(test::error_of([&] {
              exported(*gm, torch::randn({1, 2, 4, 4}), 18);
            }).find("opset 18 is not supported"),
            std::string::npos);
  onnx::ModelProto model = exported(*gm, torch::randn({1, 2, 4, 4}), 17);
  EXPECT_EQ(model.opset_import(0).version(), 17);
}

}  // namespace
}  // namespace qfx
