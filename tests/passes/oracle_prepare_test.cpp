// fuse + insert-observers against PyTorch 1.13's prepare_fx: the same nodes
// and code, the same observer classes shared the same way, the same
// observed nodes, and after one forward the same scales and zero points
// (bit for bit); then convert-to-reference against convert_to_reference_fx:
// the same nodes, code and module tree, and the same outputs.

#include "support/fixtures.h"
#include "support/graph_rows.h"
#include "support/kernel_checks.h"

#include "qfx/backend/backend_json.h"
#include "qfx/backend/builtin_backends.h"
#include "qfx/io/tensor_io.h"
#include "qfx/io/torchscript_export.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/interpreter.h"
#include "qfx/ir/kernel_workarounds.h"
#include "qfx/ir/module_registry.h"
#include "qfx/quantize.h"
#include "qfx/passes/pass_manager.h"
#include "qfx/passes/prepare_state.h"
#include "qfx/quant/observer_base.h"
#include "qfx/quant/qconfig_json.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>

namespace qfx {
namespace {

using passes::node_is_observed;

class OraclePrepare : public ::testing::TestWithParam<std::string> {};

using test::EngineGuard;

std::shared_ptr<backend::BackendConfig> backend_named(const std::string& name) {
  if (name == "my_backend") {
    return std::make_shared<backend::BackendConfig>(
        backend::load_backend_config(test::source_file("examples/backends/my_backend.json")));
  }
  return std::make_shared<backend::BackendConfig>(backend::get_backend_config(name));
}

/// What the TorchScript export of `gm` computes on `input`, loaded back with
/// torch::jit::load; the file is also kept for Python (tests/oracle/check_exported.py),
/// which must reproduce `interpreted` within `tolerance`.
c10::IValue exported_output(const ir::GraphModule& gm, const c10::IValue& input, const std::string& name,
                            const c10::IValue& interpreted, double tolerance, bool relative) {
  std::string path = ::testing::TempDir() + "qfx_export_test.pt";
  io::export_torchscript(gm, path);
  torch::jit::Module module = torch::jit::load(path);
  std::vector<c10::IValue> inputs = io::as_inputs(input, "input");
  std::string engine = at::globalContext().qEngine() == at::QEngine::QNNPACK ? "qnnpack" : "onednn";
  test::keep_for_python(name, path, inputs, interpreted, tolerance, relative, engine);
  return module.forward(inputs);
}

TEST_P(OraclePrepare, MatchesPyTorch) {
  nlohmann::json record = test::fixture_case("prepare.json", GetParam());
  auto gm = io::import_torchscript(test::fixture(record["model"]));
  std::shared_ptr<backend::BackendConfig> backend = backend_named(record["backend"]);
  PrepareCustomConfig custom;
  if (record.contains("prepare_custom_config")) {
    custom.input_quantized_indexes =
        record["prepare_custom_config"]["input_quantized_indexes"].get<std::vector<int64_t>>();
    custom.output_quantized_indexes =
        record["prepare_custom_config"]["output_quantized_indexes"].get<std::vector<int64_t>>();
  }
  prepare_fx(*gm, quant::qconfig_mapping_from_json(record["qconfig_mapping"]), *backend, custom);
  std::vector<std::string> ours = test::node_rows(gm->graph()), theirs = test::node_rows(record);
  if (record.contains("compare_node_names_only")) {  // the record says why
    for (auto* rows : {&ours, &theirs}) {
      for (std::string& row : *rows) row = row.substr(0, row.find(' '));
    }
  }
  EXPECT_EQ(ours, theirs) << test::first_difference(ours, theirs);

  std::vector<std::string> observed;
  for (const ir::Node* n : gm->graph().nodes()) {
    if (node_is_observed(*n)) observed.push_back(n->name());
  }
  std::sort(observed.begin(), observed.end());
  EXPECT_EQ(observed, record["observed_node_names"].get<std::vector<std::string>>());

  torch::NoGradGuard no_grad;
  c10::IValue input = io::load_value(test::fixture(record["input"]));
  ir::Interpreter(*gm).run(io::as_inputs(input, "input"));
  EXPECT_EQ(test::observer_rows(*gm), test::observer_rows(record["observers"]));

  // convert_to_reference_fx
  const nlohmann::json& reference = record["reference"];
  convert_to_reference_fx(*gm, *backend, custom);
  if (record.contains("quantized_input")) {  // the graph input arrives quantized
    input = at::quantize_per_tensor(input.toTensor(), record["quantized_input"][0].get<double>(),
                                    record["quantized_input"][1].get<int64_t>(), at::kQUInt8);
  }
  std::vector<std::string> ref_ours = test::node_rows(gm->graph()), ref_theirs = test::node_rows(reference);
  if (GetParam() != "functional_zoo") EXPECT_EQ(ref_ours, ref_theirs) << test::first_difference(ref_ours, ref_theirs);
  // torchvision's forward() carries type annotations a trace does not keep
  bool annotated = GetParam().rfind("resnet", 0) == 0 || GetParam().rfind("mobilenet", 0) == 0;
  // and the zoos hold calls a trace records with other literals (sum([1]) for sum(1))
  if (GetParam().find("_zoo") == std::string::npos && !annotated)
    EXPECT_EQ(gm->code(), reference["code"].get<std::string>());
  bool v3 = GetParam().rfind("mobilenet_v3_large", 0) == 0;
  if (!v3) {  // AdaptiveAvgPool2d(1) prints as given in Python
    std::string tree = gm->to_string();
    EXPECT_EQ(tree.substr(0, tree.size() - gm->code().size() - 1), reference["module_tree"].get<std::string>());
  }
  c10::IValue expected = io::load_value(test::fixture(reference["output"]));
  c10::IValue ours_out = ir::Interpreter(*gm).run(io::as_inputs(input, "input"));
  EXPECT_LE(test::max_relative_error(ours_out, expected), 1e-6);
  EXPECT_LE(
      test::max_relative_error(exported_output(*gm, input, GetParam() + "_reference", ours_out, 1e-6, true), ours_out),
      1e-6)
      << "exported reference model";

  // convert_fx's lowering, on the engine PyTorch used
  const nlohmann::json& lowered = record["lowered"];
  EngineGuard engine(lowered["engine"]);
  passes::PassOptions options;
  options.backend_config = backend;
  // PyTorch's lowered model runs LibTorch's kernels as they are: qfx's with
  // its kernel workarounds off (kernel_workarounds.h) is the same graph and
  // computes the same; with them on it must be at least as close to the
  // reference, and every lowered op within rounding of it.
  std::unique_ptr<ir::GraphModule> reference_model = gm->deep_copy();
  auto faithful_gm = gm->deep_copy();
  ir::set_kernel_workarounds(false);
  passes::PassManager().add("lower-to-native").run(*faithful_gm, options);
  ir::set_kernel_workarounds(true);
  passes::PassManager().add("lower-to-native").run(*gm, options);
  std::vector<std::string> low_ours = test::node_rows(faithful_gm->graph()), low_theirs = test::node_rows(lowered);
  if (GetParam() != "functional_zoo") EXPECT_EQ(low_ours, low_theirs) << test::first_difference(low_ours, low_theirs);
  if (GetParam().find("_zoo") == std::string::npos && !annotated)
    EXPECT_EQ(faithful_gm->code(), lowered["code"].get<std::string>());
  if (!v3 && !lowered["module_tree"].is_null()) {
    std::string tree = faithful_gm->to_string();
    EXPECT_EQ(tree.substr(0, tree.size() - faithful_gm->code().size() - 1), lowered["module_tree"].get<std::string>());
  }
  if (lowered.contains("error")) {
    // PyTorch's lowered model does not run (a lowered op has no quantized kernel); neither does ours.
    EXPECT_NE(test::error_of([&] { ir::Interpreter(*gm).run(io::as_inputs(input, "input")); }), "");
    return;
  }
  c10::IValue lowered_expected = io::load_value(test::fixture(lowered["output"]));
  c10::IValue lowered_out = ir::Interpreter(*gm).run(io::as_inputs(input, "input"));
  ir::set_kernel_workarounds(false);
  c10::IValue faithful = ir::Interpreter(*faithful_gm).run(io::as_inputs(input, "input"));
  ir::set_kernel_workarounds(true);
  EXPECT_GE(test::sqnr_db(lowered_out, ours_out), test::sqnr_db(lowered_expected, ours_out) - 0.1)
      << "further from the reference model than PyTorch's lowered model";
  // op by op, on the same quantized inputs: every lowered kernel within rounding of its reference
  test::expect_kernel_gaps_within_rounding(*reference_model, *gm, io::as_inputs(input, "input"), GetParam());
  if (lowered.contains("export_error")) {  // packed weights LibTorch cannot save: one clear error, no file
    std::string path = ::testing::TempDir() + "/qfx_unsavable.pt";
    std::string error = test::error_of([&] { io::export_torchscript(*gm, path); });
    EXPECT_NE(error.find("export: LibTorch cannot save the packed weights of this engine: " +
                         lowered["export_error"].get<std::string>()),
              std::string::npos)
        << error;
    EXPECT_FALSE(std::ifstream(path).good());
  } else {
    EXPECT_EQ(
        test::max_abs_error(exported_output(*gm, input, GetParam() + "_lowered", lowered_out, 0.0, false), lowered_out),
        0.0)
        << "exported lowered model";
  }
  double step = lowered["output_step"].get<double>();
  if (step > 0) {
    EXPECT_LE(test::max_abs_error(faithful, lowered_expected), step * (1 + 1e-6)) << "one output step: " << step;
  } else {
    EXPECT_LE(test::max_relative_error(faithful, lowered_expected), 1e-6);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, OraclePrepare,
                         ::testing::Values("linear_relu", "tutorial_no_bn", "tutorial_bn", "tutorial_default_mapping",
                                           "fusion_zoo", "functional_zoo", "module_zoo", "resnet18", "resnet18_qnnpack",
                                           "resnet50", "resnet50_qnnpack", "mobilenet_v2", "mobilenet_v2_qnnpack",
                                           "mobilenet_v3_large", "mobilenet_v3_large_onednn",
                                           "linear_relu_quantized_io", "shared_input", "dynamic_linears", "dynamic_cnn",
                                           "float16_linears", "embeddings"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace qfx

namespace qfx {
namespace {

/// Sets LibTorch's intra-op thread count for a scope.
class ThreadsGuard {
 public:
  explicit ThreadsGuard(int threads) : previous_(at::get_num_threads()) { at::set_num_threads(threads); }
  ~ThreadsGuard() { at::set_num_threads(previous_); }

 private:
  int previous_;
};

/// The oracle's mobilenet_v2, calibrated on its input and lowered for the
/// current engine, and that input.
std::pair<std::unique_ptr<ir::GraphModule>, at::Tensor> lowered_mobilenet_v2() {
  nlohmann::json record = test::fixture_case("prepare.json", "mobilenet_v2");
  auto gm = io::import_torchscript(test::fixture(record["model"]));
  prepare_fx(*gm, quant::qconfig_mapping_from_json(record["qconfig_mapping"]), backend::get_native_backend_config());
  at::Tensor input = io::load_value(test::fixture(record["input"])).toTensor();
  ir::Interpreter(*gm).run({input});
  convert_fx(*gm, backend::get_native_backend_config());
  return {std::move(gm), input};
}

// PyTorch's converted onednn mobilenet_v2 fails after a change of thread
// count ("could not create a primitive descriptor for a reorder
// primitive"); a model qfx lowers must keep running, with the same outputs.
TEST(OracleLowering, SurvivesThreadCountChanges) {
  torch::NoGradGuard no_grad;
  EngineGuard engine("onednn");
  auto [gm, input] = lowered_mobilenet_v2();
  std::vector<c10::IValue> inputs{input};
  ThreadsGuard restore(at::get_num_threads());
  ir::Interpreter interpreter(*gm);
  at::set_num_threads(2);
  c10::IValue two = interpreter.run(inputs);
  at::set_num_threads(1);
  c10::IValue one = interpreter.run(inputs);
  at::set_num_threads(2);
  c10::IValue again = interpreter.run(inputs);
  EXPECT_EQ(test::max_abs_error(one, two), 0.0);
  EXPECT_EQ(test::max_abs_error(again, two), 0.0);
}

// The same failure follows a change of batch size: a model qfx lowers keeps
// running, each sample's output the same whatever the batch it comes in.
TEST(OracleLowering, SurvivesBatchSizeChanges) {
  torch::NoGradGuard no_grad;
  EngineGuard engine("onednn");
  auto [gm, input] = lowered_mobilenet_v2();
  at::Tensor batch = at::cat({input, input.flip(0), input.flip(1), input.flip(2)});
  ThreadsGuard two(2);  // LibTorch's default here is one thread, which does not fail
  ir::Interpreter interpreter(*gm);
  at::Tensor single = interpreter.run({batch.slice(0, 1, 2)}).toTensor();
  at::Tensor full = interpreter.run({batch}).toTensor();
  at::Tensor again = interpreter.run({batch.slice(0, 1, 2)}).toTensor();
  EXPECT_TRUE(at::equal(single, full.slice(0, 1, 2)));
  EXPECT_TRUE(at::equal(again, single));
}

}  // namespace
}  // namespace qfx
