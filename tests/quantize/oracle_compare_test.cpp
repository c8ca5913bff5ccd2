// qfx::NumericComparison against PyTorch's FX numeric suite
// (tests/oracle/compare_fixtures.py): the same layers matched to the same
// float nodes, SQNR / normalized L2 / cosine as the suite's compute_* metrics.

#include "support/fixtures.h"

#include "qfx/io/tensor_io.h"
#include "qfx/io/torchscript_export.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/interpreter.h"
#include "qfx/accuracy/numeric_compare.h"
#include "qfx/quant/qconfig_mapping.h"
#include "qfx/quantize.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>

namespace qfx {
namespace {

/// The fixture model through prepare_fx, calibration and convert_fx (onednn).
std::unique_ptr<ir::GraphModule> quantized_model() {
  at::globalContext().setQEngine(at::QEngine::ONEDNN);
  auto gm = io::import_torchscript(test::fixture("compare_model.pt"));
  prepare_fx(*gm, quant::get_default_qconfig_mapping("onednn"));
  ir::Interpreter(*gm).run({io::load_value(test::fixture("compare_calib.pt"))});
  convert_fx(*gm);
  return gm;
}

/// Each layer the suite reports, found by its float node, has the suite's metrics.
void expect_suite_metrics(const NumericComparison& comparison) {
  nlohmann::json expected = test::fixture_json("compare.json");
  std::map<std::string, const LayerError*> by_float_node;
  for (const LayerError& layer : comparison.layers()) by_float_node[layer.float_node] = &layer;
  for (const auto& [name, e] : expected["layers"].items()) {
    SCOPED_TRACE(name);
    ASSERT_EQ(by_float_node.count(e["float_node"]), 1u) << "no layer compared with " << e["float_node"];
    const LayerError& layer = *by_float_node[e["float_node"]];
    EXPECT_EQ(layer.name, name);
    EXPECT_NEAR(layer.sqnr_db(), e["sqnr_db"].get<double>(), 1e-3);
    EXPECT_NEAR(layer.normalized_l2(), e["normalized_l2"].get<double>(), 1e-6);
    EXPECT_NEAR(layer.cosine(), e["cosine"].get<double>(), 1e-6);
  }
  const nlohmann::json& out = expected["output"];
  EXPECT_NEAR(comparison.output().sqnr_db(), out["sqnr_db"].get<double>(), 1e-3);
  EXPECT_NEAR(comparison.output().normalized_l2(), out["normalized_l2"].get<double>(), 1e-6);
  EXPECT_NEAR(comparison.output().cosine(), out["cosine"].get<double>(), 1e-6);
}

TEST(OracleCompare, ExportedInt8FileMatchesNumericSuite) {
  auto float_model = io::import_torchscript(test::fixture("compare_model.pt"));
  auto int8 = quantized_model();
  std::string path = (std::filesystem::temp_directory_path() / "qfx_compare_int8.pt").string();
  io::export_torchscript(*int8, path);
  NumericComparison comparison(*float_model, path);
  comparison.add({io::load_value(test::fixture("compare_data.pt"))});
  std::filesystem::remove(path);
  EXPECT_EQ(comparison.batches(), 1);
  expect_suite_metrics(comparison);
  // the float-only layers in between (the pool) are compared too
  std::vector<std::string> names;
  for (const LayerError& layer : comparison.layers()) names.push_back(layer.name);
  EXPECT_EQ(names, (std::vector<std::string>{"conv1", "conv2", "add_relu", "pool", "flatten", "fc1", "fc2"}));
}

TEST(OracleCompare, InMemoryGraphModuleMatchesNumericSuite) {
  auto float_model = io::import_torchscript(test::fixture("compare_model.pt"));
  auto int8 = quantized_model();
  NumericComparison comparison(*float_model, graph_activations(*int8));
  comparison.add({io::load_value(test::fixture("compare_data.pt"))});
  expect_suite_metrics(comparison);
}

TEST(OracleCompare, BatchesAccumulateAsOneConcatenatedBatch) {
  auto float_model = io::import_torchscript(test::fixture("compare_model.pt"));
  auto int8 = quantized_model();
  at::Tensor data = io::load_value(test::fixture("compare_data.pt")).toTensor();
  NumericComparison whole(*float_model, graph_activations(*int8));
  whole.add({data});
  NumericComparison halves(*float_model, graph_activations(*int8));
  halves.add({data.slice(0, 0, 3)});
  halves.add({data.slice(0, 3)});
  NumericComparison first(*float_model, graph_activations(*int8));
  first.add({data.slice(0, 0, 3)});
  NumericComparison second(*float_model, graph_activations(*int8));
  second.add({data.slice(0, 3)});
  EXPECT_EQ(halves.batches(), 2);
  ASSERT_EQ(whole.layers().size(), halves.layers().size());
  for (size_t i = 0; i < whole.layers().size(); ++i) {
    // the sums are those of the two batches run alone (same kernels, so exact) ...
    const LayerError &sum = halves.layers()[i], &a = first.layers()[i], &b = second.layers()[i];
    EXPECT_EQ(sum.numel, a.numel + b.numel);
    EXPECT_EQ(sum.float_sq, a.float_sq + b.float_sq);
    EXPECT_EQ(sum.quant_sq, a.quant_sq + b.quant_sq);
    EXPECT_EQ(sum.dot, a.dot + b.dot);
    EXPECT_EQ(sum.error_sq, a.error_sq + b.error_sq);
    // ... and the metrics those of the concatenated batch, up to the float
    // kernels' rounding, which may depend on the batch size
    EXPECT_NEAR(whole.layers()[i].sqnr_db(), sum.sqnr_db(), 1e-4);
  }
}

TEST(OracleCompare, UnrelatedModelsAreAnError) {
  auto float_model = io::import_torchscript(test::fixture("compare_model.pt"));
  auto other = std::make_unique<ir::GraphModule>();
  ir::Node* x = other->graph().placeholder("input");
  other->graph().output(other->graph().call_function("torch.relu", {x}));
  std::string error = test::error_of([&] { NumericComparison(*float_model, graph_activations(*other)); });
  EXPECT_NE(error.find("no node of the float model has a match"), std::string::npos) << error;
}

}  // namespace
}  // namespace qfx
