// ONNX export: the graph each model becomes (op types, initializer types,
// axes, declared shapes), and the errors. Running the models in ONNX Runtime
// is tests/onnx/check_onnx_runtime.js's job.

#include "support/fixtures.h"

#include "qfx/io/onnx_export.h"
#include "qfx/ir/interpreter.h"
#include "qfx/nn/quantizable_lstm.h"
#include "qfx/quant/qconfig.h"
#include "qfx/quant/qconfig_mapping.h"
#include "qfx/quantize.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/rnn.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

namespace qfx {
namespace {

onnx::ModelProto exported(const ir::GraphModule& gm, const std::vector<c10::IValue>& inputs, int64_t opset = 13) {
  io::OnnxExportOptions options;
  options.opset = opset;
  onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromString(io::onnx_model_bytes(gm, inputs, options)));
  return model;
}

onnx::ModelProto exported(const ir::GraphModule& gm, const at::Tensor& x, int64_t opset = 13) {
  return exported(gm, std::vector<c10::IValue>{x}, opset);
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

at::Tensor float_data(const onnx::TensorProto& t) {
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  at::Tensor out = at::empty(dims, at::kFloat);
  EXPECT_EQ(t.raw_data().size(), out.numel() * sizeof(float)) << t.name();
  std::memcpy(out.data_ptr<float>(), t.raw_data().data(), t.raw_data().size());
  return out;
}

const onnx::NodeProto& first_node(const onnx::ModelProto& model, const std::string& op_type) {
  for (const auto& node : model.graph().node()) {
    if (node.op_type() == op_type) return node;
  }
  throw std::runtime_error("no " + op_type + " node");
}

// PyTorch stacks an LSTM's gates as (input, forget, cell, output), ONNX as
// (input, output, forget, cell); GRU's (reset, update, new) as (update, reset, hidden).
TEST(OnnxExport, RecurrentModulesBecomeOnnxOpsPerLayerWithGatesInOnnxOrder) {
  torch::manual_seed(0);
  auto gm = std::make_unique<ir::GraphModule>();
  torch::nn::LSTM lstm(torch::nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true).batch_first(true));
  torch::nn::GRU gru(torch::nn::GRUOptions(8, 2));
  gm->add_submodule("lstm", lstm.ptr());
  gm->add_submodule("gru", gru.ptr());
  ir::Graph& g = gm->graph();
  ir::Node* y = g.call_function("operator.getitem", {g.call_module("lstm", {g.placeholder("x")}), int64_t{0}});
  g.output(g.call_module("gru", {y}));
  gm->root().eval();
  onnx::ModelProto model = exported(*gm, torch::randn({2, 5, 3}));
  std::vector<std::string> ops = op_types(model);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "LSTM"), 2) << ::testing::PrintToString(ops);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "GRU"), 1);
  const onnx::NodeProto& layer0 = first_node(model, "LSTM");
  std::map<std::string, std::string> attrs;
  for (const auto& a : layer0.attribute()) attrs[a.name()] = a.has_s() ? a.s() : std::to_string(a.i());
  EXPECT_EQ(attrs, (std::map<std::string, std::string>{{"direction", "bidirectional"}, {"hidden_size", "4"}}));
  auto rows = [](const at::Tensor& w, std::vector<int64_t> order, int64_t h) {
    std::vector<at::Tensor> parts;
    for (int64_t gate : order) parts.push_back(w.narrow(0, gate * h, h));
    return at::cat(parts);
  };
  at::Tensor w = float_data(initializer(model, layer0.input(1)));
  EXPECT_EQ(w.sizes().vec(), (std::vector<int64_t>{2, 16, 3}));
  EXPECT_TRUE(at::equal(w[0], rows(lstm->named_parameters()["weight_ih_l0"], {0, 3, 1, 2}, 4)));
  EXPECT_TRUE(at::equal(w[1], rows(lstm->named_parameters()["weight_ih_l0_reverse"], {0, 3, 1, 2}, 4)));
  at::Tensor b = float_data(initializer(model, layer0.input(3)));
  EXPECT_TRUE(at::equal(b[0].narrow(0, 16, 16), rows(lstm->named_parameters()["bias_hh_l0"], {0, 3, 1, 2}, 4)));
  const onnx::NodeProto& gru_node = first_node(model, "GRU");
  at::Tensor r = float_data(initializer(model, gru_node.input(2)));
  EXPECT_TRUE(at::equal(r[0], rows(gru->named_parameters()["weight_hh_l0"], {1, 0, 2}, 2)));
  bool before_reset = false;
  for (const auto& a : gru_node.attribute()) before_reset |= a.name() == "linear_before_reset" && a.i() == 1;
  EXPECT_TRUE(before_reset) << "PyTorch's GRU applies the reset gate after the recurrent product";
  const auto& output = model.graph().output(0).type().tensor_type().shape();  // GRU's (output, h_n), flattened
  EXPECT_EQ(output.dim(1).dim_value(), 5);
  EXPECT_EQ(model.graph().output_size(), 2);
}

// Run in ONNX Runtime by the onnx_runtime check against LibTorch's own
// embedding_bag: mean over bags given by offsets, one of them empty (mean 0),
// the last running to the end of the indices.
TEST(OnnxExportOracle, EmbeddingBagMeanWithAnEmptyBagIsLibTorchs) {
  torch::manual_seed(0);
  auto gm = std::make_unique<ir::GraphModule>();
  gm->add_submodule("bag", torch::nn::EmbeddingBag(torch::nn::EmbeddingBagOptions(10, 3).mode(torch::kMean)).ptr());
  ir::Graph& g = gm->graph();
  ir::Node* indices = g.placeholder("indices");
  g.output(g.call_module("bag", {indices, g.placeholder("offsets")}));
  std::vector<c10::IValue> inputs = {torch::tensor({1, 7, 3, 3, 9, 0}), torch::tensor({0, 2, 2, 4})};
  c10::IValue expected =
      gm->get_submodule("bag")->as<torch::nn::EmbeddingBag>()->forward(inputs[0].toTensor(), inputs[1].toTensor());
  ASSERT_TRUE(at::equal(expected.toTensor()[1], at::zeros({3})));
  std::vector<std::string> ops = op_types(exported(*gm, inputs));
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "MatMul"), 1) << ::testing::PrintToString(ops);
  test::keep_for_onnx("onnx_embedding_bag_mean", *gm, inputs, expected, expected, 0);
}

/// The ints of initializer `name` (an int64 tensor).
std::vector<int64_t> int_data(const onnx::ModelProto& model, const std::string& name) {
  const onnx::TensorProto& t = initializer(model, name);
  std::vector<int64_t> out(t.raw_data().size() / sizeof(int64_t));
  std::memcpy(out.data(), t.raw_data().data(), t.raw_data().size());
  return out;
}

// Run in ONNX Runtime by the onnx_runtime check against LibTorch's own
// indexing and shuffles.
TEST(OnnxExportOracle, IndexingAndShufflesAreLibTorchs) {
  using ir::Argument;
  auto gm = std::make_unique<ir::GraphModule>();
  ir::Graph& g = gm->graph();
  ir::Node* x = g.placeholder("x");
  auto index = [&](Argument::Items items) { return g.call_function("operator.getitem", {x, Argument::tuple(items)}); };
  ir::Node* a = index({Argument::slice({}, {}, {}), Argument::slice(1, 3, {})});         // x[:, 1:3]
  ir::Node* b = index({Argument::ellipsis(), Argument::slice({}, {}, 2), Argument()});   // x[..., ::2, None]
  ir::Node* c = index({int64_t{1}, int64_t{-1}});                                        // x[1, -1]
  ir::Node* d = index({Argument::slice(-4, {}, {}), Argument::ellipsis(), int64_t{0}});  // x[-4:, ..., 0]
  ir::Node* e = g.call_function("torch.nn.functional.pixel_shuffle", {x, int64_t{2}});
  ir::Node* f = g.call_function("torch.nn.functional.pixel_unshuffle", {x, int64_t{3}});
  ir::Node* h = g.call_function("torch.nn.functional.channel_shuffle", {x, int64_t{2}});
  g.output(Argument::tuple({a, b, c, d, e, f, h}));
  std::vector<c10::IValue> inputs = {torch::arange(2 * 4 * 6 * 6, torch::kFloat).reshape({2, 4, 6, 6})};
  c10::IValue expected = ir::Interpreter(*gm).run(inputs);
  onnx::ModelProto model = exported(*gm, inputs);
  EXPECT_EQ(op_types(model),
            (std::vector<std::string>{"Slice",     "Slice",        "Unsqueeze", "Gather",    "Gather",   "Slice",
                                      "Gather",    "DepthToSpace", "Reshape",   "Transpose", "Reshape",  "Reshape",
                                      "Transpose", "Reshape",      "Identity",  "Identity",  "Identity", "Identity",
                                      "Identity",  "Identity",     "Identity"}));
  const onnx::NodeProto& slice = first_node(model, "Slice");  // x[:, 1:3]: dim 1 from 1 to 3
  EXPECT_EQ(int_data(model, slice.input(1)), std::vector<int64_t>{1});
  EXPECT_EQ(int_data(model, slice.input(2)), std::vector<int64_t>{3});
  EXPECT_EQ(int_data(model, slice.input(3)), std::vector<int64_t>{1});
  test::keep_for_onnx("onnx_indexing_and_shuffles", *gm, inputs, expected, expected, 0);
}

TEST(OnnxExport, IndexingAQuantizedTensorKeepsItsIntegersAndQParams) {
  auto gm = std::make_unique<ir::GraphModule>();
  ir::Graph& g = gm->graph();
  ir::Node* q = g.call_function("torch.quantize_per_tensor", {g.placeholder("x"), 0.5, int64_t{3}, c10::kQUInt8});
  ir::Node* row =
      g.call_function("operator.getitem", {q, ir::Argument::tuple({int64_t{0}, ir::Argument::slice(1, {}, {})})});
  g.output(g.call_method("dequantize", {row}));
  onnx::ModelProto model = exported(*gm, torch::randn({2, 3}));
  EXPECT_EQ(op_types(model),
            (std::vector<std::string>{"QuantizeLinear", "Gather", "Slice", "DequantizeLinear", "Identity"}));
  EXPECT_EQ(model.graph().node(3).input(1), model.graph().node(0).input(1)) << "the same scale";
}

TEST(OnnxExport, IndexingWithATensorIsAnErrorNamingTheNode) {
  auto gm = std::make_unique<ir::GraphModule>();
  ir::Graph& g = gm->graph();
  g.output(g.call_function("operator.getitem", {g.placeholder("x"), g.placeholder("i")}));
  std::string error = test::error_of([&] {
    exported(*gm, std::vector<c10::IValue>{torch::ones({3}), torch::tensor({0, 2})});
  });
  EXPECT_EQ(error,
            "ONNX export: node %getitem (call_function operator.getitem): indexing a tensor with a tensor has "
            "no ONNX form here");
}

// Sizes and ranks known at export time are folded as Python computes them:
// floor division and modulo round toward minus infinity.
TEST(OnnxExport, ArithmeticOnNumbersKnownAtExportTimeIsPythons) {
  auto gm = std::make_unique<ir::GraphModule>();
  ir::Graph& g = gm->graph();
  ir::Node* x = g.placeholder("x");
  ir::Node* rank = g.call_method("dim", {x});
  ir::Node* start = g.call_function("operator.mod", {rank, int64_t{3}});  // 4 % 3 = 1
  ir::Node* end = g.call_function(
      "operator.floordiv", {g.call_function("operator.sub", {rank, int64_t{9}}), int64_t{2}});  // -5 // 2 = -3, not -2
  g.call_function("torch._assert", {g.call_function("operator.eq", {rank, int64_t{4}}), std::string("rank 4")});
  g.output(g.call_function("torch.flatten", {x, start, end}));
  onnx::ModelProto model = exported(*gm, torch::ones({2, 3, 4, 5}));
  const auto& shape = model.graph().output(0).type().tensor_type().shape();
  ASSERT_EQ(shape.dim_size(), 4) << "flatten(x, 1, -3) keeps every dim";
  EXPECT_EQ(shape.dim(1).dim_value(), 3);
  for (const auto& node : model.graph().node()) EXPECT_NE(node.op_type(), "Mod") << "folded at export time";
}

// Run in ONNX Runtime by the onnx_runtime check against LibTorch's own ops:
// roll, narrow, repeat_interleave, the pad modes, masked_fill, % and // with
// floor rounding on negative floats and integers, bilinear interpolation.
TEST(OnnxExportOracle, MovesPadsAndFloorArithmeticAreLibTorchs) {
  using ir::Argument;
  auto gm = std::make_unique<ir::GraphModule>();
  ir::Graph& g = gm->graph();
  ir::Node* x = g.placeholder("x");
  ir::Node* t = g.placeholder("t");
  auto as_float = [&](ir::Node* n) { return g.call_method("to", {n, c10::kFloat}); };
  auto ints = [](std::vector<int64_t> v) {
    Argument::Items items(v.begin(), v.end());
    return Argument::list(items);
  };
  auto pad = [&](std::vector<int64_t> pads, const char* mode) {
    return g.call_function("torch.nn.functional.pad", {x, ints(pads), std::string(mode)});
  };
  std::vector<Argument> outs = {
      g.call_function("torch.roll", {x, ints({1, -2}), ints({2, 3})}),
      g.call_method("narrow", {x, int64_t{3}, int64_t{-4}, int64_t{3}}),
      g.call_method("repeat_interleave", {x, int64_t{2}, int64_t{2}}),
      g.call_function("torch.nn.functional.pad", {x, ints({1, 2, 0, 1}), std::string("constant"), 0.5}),
      pad({2, 1, 1, 0}, "reflect"),
      pad({1, 1, 2, 0}, "replicate"),
      g.call_method("masked_fill", {x, g.call_function("operator.gt", {x, 0.5}), 0.5}),
      g.call_function("operator.mod", {x, 0.7}),
      g.call_function("operator.floordiv", {x, -0.9}),
      as_float(g.call_function("operator.mod", {t, int64_t{3}})),
      as_float(g.call_function("operator.floordiv", {t, int64_t{-4}})),
      as_float(g.call_function("operator.mod", {int64_t{-7}, t})),
      as_float(g.call_method("masked_fill", {t, g.call_function("operator.lt", {t, int64_t{0}}), int64_t{7}})),
      // float ulps apart from ATen's upsample (see check_onnx_runtime.js, ROUNDING)
      g.call_function("torch.nn.functional.interpolate",
                      {x, ints({9, 11}), Argument(), std::string("bilinear"), false}),
  };
  g.output(Argument::tuple(outs));
  std::vector<c10::IValue> inputs = {
      (torch::arange(2 * 4 * 6 * 6, torch::kFloat) - 150).mul(0.37).reshape({2, 4, 6, 6}),
      torch::tensor({{-9, -4, -1, 1, 5}, {7, 12, -13, 2, 3}})};
  c10::IValue expected = ir::Interpreter(*gm).run(inputs);
  exported(*gm, inputs);
  test::keep_for_onnx("onnx_moves_pads_floor_arithmetic", *gm, inputs, expected, expected, 0);
}

// roll, narrow and repeat_interleave along dim 0: refused with a symbolic
// batch (its extent is not known), LibTorch's ops with --static-batch
// (onnx_runtime runs the model).
TEST(OnnxExportOracle, MovesAlongDimZeroWithAStaticBatchAreLibTorchs) {
  auto gm = std::make_unique<ir::GraphModule>();
  ir::Graph& g = gm->graph();
  ir::Node* x = g.placeholder("x");
  std::vector<ir::Argument> outs = {
      g.call_function("torch.roll", {x, ir::Argument::list({int64_t{1}}), ir::Argument::list({int64_t{0}})}),
      g.call_method("narrow", {x, int64_t{0}, int64_t{1}, int64_t{2}}),
      g.call_method("repeat_interleave", {x, int64_t{3}, int64_t{0}}),
  };
  g.output(ir::Argument::tuple(outs));
  std::vector<c10::IValue> inputs = {torch::arange(3 * 2 * 4, torch::kFloat).reshape({3, 2, 4})};
  c10::IValue expected = ir::Interpreter(*gm).run(inputs);
  EXPECT_NE(test::error_of([&] {
              exported(*gm, inputs);
            }).find("torch.roll along dim 0, the symbolic batch, has no ONNX form here (--static-batch fixes it)"),
            std::string::npos);
  io::OnnxExportOptions fixed;
  fixed.dynamic_batch = false;
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(io::onnx_model_bytes(*gm, inputs, fixed)));
  EXPECT_EQ(model.graph().output(2).type().tensor_type().shape().dim(0).dim_value(), 9);
  test::keep_for_onnx("onnx_moves_along_dim_zero", *gm, inputs, expected, expected, 0, nullptr, fixed);
}

// With a symbolic batch, a size that does not change with the batch is a
// constant (the input's declared shape fixes it): the pads below are
// initializers; the batch's size stays a Shape op. A static batch folds both.
TEST(OnnxExport, SizesThatDoNotDependOnTheBatchAreConstants) {
  auto gm = std::make_unique<ir::GraphModule>();
  ir::Graph& g = gm->graph();
  ir::Node* x = g.placeholder("x");
  ir::Node* w = g.call_method("size", {x, int64_t{-1}});
  ir::Node* pad = g.call_function(
      "operator.mod", {g.call_function("operator.sub", {int64_t{3}, g.call_function("operator.mod", {w, int64_t{3}})}),
                       int64_t{3}});  // (3 - 5 % 3) % 3 = 1
  ir::Node* padded = g.call_function("torch.nn.functional.pad", {x, ir::Argument::list({int64_t{0}, pad})});
  g.output(g.call_method("view", {padded, g.call_method("size", {x, int64_t{0}}), int64_t{-1}}));
  onnx::ModelProto model = exported(*gm, torch::ones({2, 3, 5, 5}));
  EXPECT_EQ(op_types(model),
            (std::vector<std::string>{"Pad", "Shape", "Gather", "Unsqueeze", "Concat", "Reshape", "Identity"}));
  EXPECT_EQ(int_data(model, first_node(model, "Pad").input(1)), (std::vector<int64_t>{0, 0, 0, 0, 0, 0, 0, 1}));
  const auto& out = model.graph().output(0).type().tensor_type().shape();
  EXPECT_EQ(out.dim(0).dim_param(), "batch");
  EXPECT_EQ(out.dim(1).dim_value(), 3 * 5 * 6);

  io::OnnxExportOptions fixed;
  fixed.dynamic_batch = false;
  onnx::ModelProto fixed_model;
  ASSERT_TRUE(fixed_model.ParseFromString(io::onnx_model_bytes(*gm, {torch::ones({2, 3, 5, 5})}, fixed)));
  EXPECT_EQ(op_types(fixed_model), (std::vector<std::string>{"Pad", "Reshape", "Identity"}));
}

// The static quantized LSTM (2 layers, both directions) exported on a
// 3-step example and run by the onnx_runtime check on 7 steps (dim 0, the
// symbolic one): each cell's first step and then a Loop, whatever the
// length; the outputs are LibTorch's quantized kernels' (the interpreter's).
TEST(OnnxExportOracle, QuantizedLstmRunsAnySequenceLength) {
  torch::NoGradGuard no_grad;
  test::EngineGuard engine("onednn");
  torch::manual_seed(0);
  auto lstm = torch::nn::LSTM(torch::nn::LSTMOptions(4, 6).num_layers(2).bidirectional(true));
  auto observed = nn::QuantizableLSTMImpl::from_float(*lstm, quant::get_default_qconfig("onednn"));
  for (int i = 0; i < 4; ++i) {
    std::vector<c10::IValue> in{torch::randn({5, 3, 4})};
    observed->forward(in);
  }
  auto gm = std::make_unique<ir::GraphModule>();
  gm->add_submodule("lstm", nn::QuantizedLSTMImpl::from_observed(*observed));
  ir::Graph& g = gm->graph();
  ir::Node* x =
      g.call_function("torch.quantize_per_tensor", {g.placeholder("x"), 0.05, int64_t{128}, c10::ScalarType::QUInt8});
  ir::Node* result = g.call_module("lstm", {x});
  ir::Node* state = g.call_function("operator.getitem", {result, int64_t{1}});
  auto dequantized = [&](ir::Node* parent, int64_t index) {
    return g.call_method("dequantize", {g.call_function("operator.getitem", {parent, index})});
  };
  g.output(ir::Argument::tuple({dequantized(result, 0), dequantized(state, 0), dequantized(state, 1)}));

  std::vector<c10::IValue> example{torch::randn({3, 2, 4})};
  std::vector<std::string> ops = op_types(exported(*gm, example));
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Loop"), 4) << "one per layer and direction";
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Sigmoid"), 4 * 3) << "each cell's first step";
  std::vector<c10::IValue> inputs{torch::randn({7, 2, 4})};
  c10::IValue expected = ir::Interpreter(*gm).run(inputs);
  // one step of the output (layer 1's forward cell's), by which ONNX Runtime may round a tie apart
  double step = gm->get_submodule("lstm")->as<nn::QuantizedLSTMImpl>()->cells()[2].scales[4];
  test::keep_for_onnx("onnx_quantized_lstm_longer_sequence", *gm, inputs, expected, expected, step, &example);
}

TEST(OnnxExport, OpWithoutOnnxFormIsAnErrorNamingTheNodeAndNothingIsWritten) {
  auto gm = std::make_unique<ir::GraphModule>();
  ir::Graph& g = gm->graph();
  ir::Node* x = g.placeholder("x");
  g.output(g.call_function("torch.exp", {x}));
  std::string path = (std::filesystem::temp_directory_path() / "qfx_onnx_error.onnx").string();
  std::filesystem::remove(path);
  std::string error = test::error_of([&] { io::export_onnx(*gm, {torch::ones({2})}, path); });
  EXPECT_EQ(error, "ONNX export: node %exp (call_function torch.exp): no ONNX form for this op");
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
