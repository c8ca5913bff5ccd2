// PrepareCustomConfig against PyTorch 1.13: a standalone module (by name,
// and by class with quantized input and output), a non-traceable module
// with data-dependent control flow run as TorchScript, a preserved buffer.
// The config is read from JSON with PyTorch's to_dict() keys; the model is
// imported with qfx::import_options(config). Compared: parent and standalone
// nodes and code after prepare_fx, every observer's qparams after one
// forward, codes and outputs after convert_to_reference_fx (<= 1e-6) and
// convert_fx (one output step), the preserved buffer; the exported lowered
// model gives the interpreter's output. Custom module classes registered in
// C++ swap in as PyTorch's Python ones do.

#include "support/fixtures.h"
#include "support/graph_rows.h"

#include "qfx/backend/builtin_backends.h"
#include "qfx/passes/custom_config_json.h"
#include "qfx/io/tensor_io.h"
#include "qfx/io/torchscript_export.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/interpreter.h"
#include "qfx/ir/module_registry.h"
#include "qfx/nn/custom_modules.h"
#include "qfx/nn/opaque_modules.h"
#include "qfx/quant/qconfig_json.h"
#include "qfx/quantize.h"

#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

namespace qfx {
namespace {

class OracleCustomConfig : public ::testing::TestWithParam<std::string> {};

ir::GraphModule& standalone_of(const ir::GraphModule& gm) {
  auto sm = std::dynamic_pointer_cast<nn::NestedGraphModuleImpl>(gm.get_submodule("block"));
  TORCH_CHECK(sm != nullptr, "block was not imported as a standalone module");
  return sm->graph_module();
}

/// `text` with every `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

/// A traced submodule's inputs are `argument_1`, ... where FX reads the
/// Python signature (`x`): the one difference allowed (docs/divergences.md).
void expect_graph(const ir::GraphModule& gm, const nlohmann::json& record, const std::string& what) {
  std::vector<std::string> ours = test::node_rows(gm.graph()), theirs = test::node_rows(record);
  for (std::string& row : ours) row = replaced(row, "argument_1", "x");
  EXPECT_EQ(ours, theirs) << what << ": " << test::first_difference(ours, theirs);
  EXPECT_EQ(replaced(gm.code(), "argument_1", "x"), record["code"].get<std::string>()) << what;
}

TEST_P(OracleCustomConfig, MatchesPyTorch) {
  nlohmann::json record = test::fixture_case("custom_configs.json", GetParam());
  PrepareCustomConfig custom = prepare_custom_config_from_json(record["prepare_custom_config"]);
  auto gm = io::import_torchscript(test::fixture(record["model"]), import_options(custom));
  EXPECT_NE(std::dynamic_pointer_cast<nn::ScriptModuleImpl>(gm->get_submodule("gate")), nullptr);
  backend::BackendConfig backend = backend::get_native_backend_config();
  prepare_fx(*gm, quant::qconfig_mapping_from_json(record["qconfig_mapping"]), backend, custom);
  expect_graph(*gm, record["prepared"], "prepared");
  expect_graph(standalone_of(*gm), record["standalone_prepared"], "prepared standalone module");

  torch::NoGradGuard no_grad;
  c10::IValue input = io::load_value(test::fixture(record["input"]));
  ir::Interpreter(*gm).run({input});
  EXPECT_EQ(test::observer_rows(*gm), test::observer_rows(record["observers"]));
  EXPECT_EQ(test::observer_rows(standalone_of(*gm)), test::observer_rows(record["standalone_observers"]));

  ConvertCustomConfig convert_config;
  convert_config.preserved_attributes = {"class_weights"};
  auto reference = io::import_torchscript(test::fixture(record["model"]), import_options(custom));
  prepare_fx(*reference, quant::qconfig_mapping_from_json(record["qconfig_mapping"]), backend, custom);
  ir::Interpreter(*reference).run({input});
  convert_to_reference_fx(*reference, backend, custom, convert_config);
  expect_graph(*reference, record["reference"], "reference");
  expect_graph(standalone_of(*reference), record["reference"]["standalone"], "reference standalone module");
  c10::IValue expected = io::load_value(test::fixture(record["reference"]["output"]));
  EXPECT_LE(test::max_relative_error(ir::Interpreter(*reference).run({input}), expected), 1e-6);

  at::globalContext().setQEngine(at::QEngine::ONEDNN);
  convert_fx(*gm, backend, custom, convert_config);
  const nlohmann::json& lowered = record["lowered"];
  expect_graph(*gm, lowered, "lowered");
  expect_graph(standalone_of(*gm), lowered["standalone"], "lowered standalone module");
  c10::IValue output = ir::Interpreter(*gm).run({input});
  double step = lowered["output_step"].get<double>();
  EXPECT_LE(test::max_abs_error(output, io::load_value(test::fixture(lowered["output"]))), step * (1 + 1e-6));

  at::Tensor preserved = io::load_value(test::fixture(record["preserved"]["class_weights"])).toTensor();
  ASSERT_EQ(gm->preserved_attributes().count("class_weights"), 1u);
  EXPECT_TRUE(gm->preserved_attributes().at("class_weights").toTensor().equal(preserved));

  std::string path = ::testing::TempDir() + "qfx_custom_config_export.pt";
  io::export_torchscript(*gm, path);
  torch::jit::Module exported = torch::jit::load(path);
  EXPECT_EQ(test::max_abs_error(exported.forward({input}), output), 0.0);
  EXPECT_TRUE(exported.attr("class_weights").toTensor().equal(preserved));
  test::keep_for_python(GetParam() + "_lowered", path, {input}, output, 0.0, false, "onednn");
}

/// The test's custom module classes, as the fixture's Python ones: both run
/// the float module's TorchScript; the quantized one takes and returns quint8.
class CustomLinearBase : public torch::nn::Module {
 public:
  explicit CustomLinearBase(const torch::jit::Module& script) : script_(script) {}
  at::Tensor run(const at::Tensor& x) { return script_.forward({x}).toTensor(); }
  const torch::jit::Module& script() const { return script_; }

 private:
  torch::jit::Module script_;
};

class ObservedCustomLinear : public CustomLinearBase {
 public:
  using CustomLinearBase::CustomLinearBase;
};

class QuantizedCustomLinear : public CustomLinearBase {
 public:
  QuantizedCustomLinear(const torch::jit::Module& script, double scale, int64_t zero_point)
      : CustomLinearBase(script), scale_(scale), zero_point_(zero_point) {}
  at::Tensor forward(const at::Tensor& x) {
    return at::quantize_per_tensor(run(x.dequantize()), scale_, zero_point_, at::kQUInt8);
  }

 private:
  double scale_;
  int64_t zero_point_;
};

void register_test_custom_classes() {
  static const bool registered = [] {
    ir::ModuleRegistry::instance().add({"ObservedCustomLinear", typeid(ObservedCustomLinear),
                                        [](torch::nn::Module& m, std::vector<c10::IValue>& in) -> c10::IValue {
                                          return dynamic_cast<ObservedCustomLinear&>(m).run(in.at(0).toTensor());
                                        },
                                        nullptr, ""});
    ir::ModuleRegistry::instance().add({"QuantizedCustomLinear", typeid(QuantizedCustomLinear),
                                        [](torch::nn::Module& m, std::vector<c10::IValue>& in) -> c10::IValue {
                                          return dynamic_cast<QuantizedCustomLinear&>(m).forward(in.at(0).toTensor());
                                        },
                                        nullptr, ""});
    nn::register_custom_module_class(
        {"ObservedCustomLinear",
         [](const torch::nn::Module& float_module, const quant::QConfig&) -> std::shared_ptr<torch::nn::Module> {
           return std::make_shared<ObservedCustomLinear>(
               dynamic_cast<const nn::ScriptModuleImpl&>(float_module).script());
         },
         nullptr});
    nn::register_custom_module_class(
        {"QuantizedCustomLinear", nullptr,
         [](const torch::nn::Module& observed,
            quant::ActivationPostProcess* output_observer) -> std::shared_ptr<torch::nn::Module> {
           quant::QParams q = output_observer->calculate_qparams();
           return std::make_shared<QuantizedCustomLinear>(dynamic_cast<const ObservedCustomLinear&>(observed).script(),
                                                          q.scale.item<double>(), q.zero_point.item<int64_t>());
         }});
    return true;
  }();
  (void)registered;
}

TEST(OracleCustomModule, SwapsObservedAndQuantizedClassesAsPyTorch) {
  register_test_custom_classes();
  nlohmann::json record = test::fixture_json("custom_module.json");
  PrepareCustomConfig custom = prepare_custom_config_from_json(record["prepare_custom_config"]);
  auto gm = io::import_torchscript(test::fixture(record["model"]), import_options(custom));
  prepare_fx(*gm, quant::qconfig_mapping_from_json(record["qconfig_mapping"]), backend::get_native_backend_config(),
             custom);
  expect_graph(*gm, record["prepared"], "prepared");
  EXPECT_NE(std::dynamic_pointer_cast<ObservedCustomLinear>(gm->get_submodule("custom")), nullptr);
  torch::NoGradGuard no_grad;
  c10::IValue input = io::load_value(test::fixture(record["input"]));
  ir::Interpreter(*gm).run({input});
  EXPECT_EQ(test::observer_rows(*gm), test::observer_rows(record["observers"]));

  at::globalContext().setQEngine(at::QEngine::ONEDNN);
  convert_fx(*gm, backend::get_native_backend_config(), custom,
             convert_custom_config_from_json(record["convert_custom_config"]));
  expect_graph(*gm, record["lowered"], "lowered");
  EXPECT_NE(std::dynamic_pointer_cast<QuantizedCustomLinear>(gm->get_submodule("custom")), nullptr);
  double step = record["lowered"]["output_step"].get<double>();
  c10::IValue expected = io::load_value(test::fixture(record["lowered"]["output"]));
  EXPECT_LE(test::max_abs_error(ir::Interpreter(*gm).run({input}), expected), step * (1 + 1e-6));
}

TEST(OracleCustomModuleErrors, UnregisteredClassIsAnErrorNamingIt) {
  PrepareCustomConfig custom;
  custom.float_to_observed_custom_module_classes["static"]["CustomLinear"] = "NoSuchObservedClass";
  auto gm = io::import_torchscript(test::fixture("custom_module_net.pt"), import_options(custom));
  std::string error = test::error_of([&] {
    prepare_fx(*gm, quant::get_default_qconfig_mapping("onednn"), backend::get_native_backend_config(), custom);
  });
  EXPECT_NE(error.find("%custom: custom module class 'NoSuchObservedClass' is not registered"), std::string::npos)
      << error;
}

INSTANTIATE_TEST_SUITE_P(Cases, OracleCustomConfig, ::testing::Values("standalone_by_name", "standalone_quantized_io"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(OracleCustomConfigErrors, NonTraceableModuleIsAnImportErrorWithoutTheConfig) {
  std::string error = test::error_of([] { io::import_torchscript(test::fixture("custom_config_net.pt")); });
  EXPECT_NE(error.find("custom_config_net.pt"), std::string::npos) << error;
}

TEST(OracleCustomConfigErrors, MissingPreservedAttributeIsAnError) {
  PrepareCustomConfig custom;
  custom.non_traceable_module_names = {"gate"};
  custom.preserved_attributes = {"no_such_attribute"};
  std::string error =
      test::error_of([&] { io::import_torchscript(test::fixture("custom_config_net.pt"), import_options(custom)); });
  EXPECT_NE(error.find("preserved attribute 'no_such_attribute' is not an attribute of the model"), std::string::npos)
      << error;
}

TEST(OracleCustomConfigErrors, StandaloneModuleInlinedByTheImportIsAnError) {
  PrepareCustomConfig custom;
  custom.non_traceable_module_names = {"gate"};
  auto gm = io::import_torchscript(test::fixture("custom_config_net.pt"), import_options(custom));
  custom.standalone_module_names = {{"block", {}}};  // not in the import options: block was inlined
  std::string error = test::error_of([&] {
    prepare_fx(*gm, quant::get_default_qconfig_mapping("onednn"), backend::get_native_backend_config(), custom);
  });
  EXPECT_NE(error.find("prepare_fx: the PrepareCustomConfig names the standalone module \"block\", which the import "
                       "inlined"),
            std::string::npos)
      << error;
  custom.standalone_module_names = {{"no_such_block", {}}};
  error = test::error_of([&] {
    prepare_fx(*gm, quant::get_default_qconfig_mapping("onednn"), backend::get_native_backend_config(), custom);
  });
  EXPECT_NE(error.find("names the standalone module \"no_such_block\", which is not a module of the model"),
            std::string::npos)
      << error;
}

TEST(CustomConfigJson, ErrorsNameThePath) {
  EXPECT_NE(test::error_of([] {
              prepare_custom_config_from_json(nlohmann::json::parse(R"({"standalone_module_name": [["a", null]]})"));
            }).find("standalone_module_name[0]: expected [name, qconfig_mapping"),
            std::string::npos);
  EXPECT_NE(test::error_of([] {
              prepare_custom_config_from_json(nlohmann::json::parse(R"({"non_traceable_module_class": [3]})"));
            }).find("non_traceable_module_class[0]: expected a name"),
            std::string::npos);
  EXPECT_NE(test::error_of([] {
              convert_custom_config_from_json(
                  nlohmann::json::parse(R"({"observed_to_quantized_custom_module_class": {"statik": {}}})"));
            }).find("observed_to_quantized_custom_module_class.statik: unknown quant type"),
            std::string::npos);
  EXPECT_NE(test::error_of([] {
              fuse_custom_config_from_json(nlohmann::json::parse(R"({"preserved": []})"));
            }).find("unknown key \"preserved\""),
            std::string::npos);
}

}  // namespace
}  // namespace qfx
