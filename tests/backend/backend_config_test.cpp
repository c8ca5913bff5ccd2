// BackendConfig API: PyTorch's replace-in-place rule, validation, JSON round
// trips of every built-in, and JSON errors that name their path.

#include "qfx/backend/backend_json.h"
#include "qfx/backend/builtin_backends.h"
#include "support/fixtures.h"

#include <gtest/gtest.h>
#include <fstream>
#include <nlohmann/json.hpp>

namespace qfx::backend {
namespace {

using nlohmann::json;
using test::error_of;

const DTypeConfig kWeightedInt8{c10::kQUInt8, c10::kQUInt8, c10::kQInt8, c10::kFloat};

TEST(BackendConfig, SettingAPatternAgainReplacesItsConfigInPlace) {
  BackendConfig config("b");
  config.set_backend_pattern_config(BackendPatternConfig("torch.nn.Linear"))
      .set_backend_pattern_config(BackendPatternConfig().set_pattern({"torch.nn.Conv2d", "torch.nn.ReLU"}))
      .set_backend_pattern_config(BackendPatternConfig("torch.nn.Linear").add_dtype_config(kWeightedInt8));
  ASSERT_EQ(config.configs().size(), 2u);
  EXPECT_EQ(config.configs()[0].pattern().str(), "torch.nn.Linear");
  EXPECT_EQ(config.configs()[0].dtype_configs().size(), 1u);
  // The same pattern written in the complex format is the same pattern.
  config.set_backend_pattern_config(BackendPatternConfig()
                                        ._set_pattern_complex_format({"torch.nn.ReLU", {"torch.nn.Conv2d"}})
                                        .set_root_module("torch.nn.Conv2d"));
  ASSERT_EQ(config.configs().size(), 2u);
  EXPECT_EQ(config.configs()[1].root_module(), "torch.nn.Conv2d");
  EXPECT_NE(config.find(pattern::Pattern::sequence({"torch.nn.Conv2d", "torch.nn.ReLU"})), nullptr);
  EXPECT_EQ(config.find(pattern::Pattern::op("torch.nn.Conv2d")), nullptr);
}

TEST(BackendConfig, SettersCheckNames) {
  BackendPatternConfig c;
  EXPECT_NE(error_of([&] { c.set_root_module("torch.nn.Lienar"); }).find("unknown module type \"torch.nn.Lienar\""),
            std::string::npos);
  EXPECT_NE(error_of([&] { c.set_qat_module("torch.add"); }).find("unknown module type"), std::string::npos);
  EXPECT_NE(error_of([&] { c.set_fuser_method("fuse_everything"); }).find("unknown fuser method \"fuse_everything\""),
            std::string::npos);
  EXPECT_NE(error_of([&] { c._set_root_node_getter("nobody"); }).find("unknown root node getter"), std::string::npos);
  EXPECT_NE(error_of([&] { c._set_extra_inputs_getter("nobody"); }).find("unknown extra inputs getter"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              c.set_pattern({"torch.nn.Conv2d", "torch.nn.BatchNorm2d", "torch.nn.ReLU", "torch.nn.ReLU"});
            }).find("2 or 3 ops, got 4"),
            std::string::npos);
  // 1.13's module paths are accepted and stored by their torch.ao name.
  c.set_reference_quantized_module("torch.nn.quantized._reference.Linear");
  EXPECT_EQ(c.reference_quantized_module(), "torch.ao.nn.quantized.reference.Linear");
}

TEST(BackendConfig, ValidationOnInsert) {
  BackendConfig config;
  EXPECT_NE(error_of([&] { config.set_backend_pattern_config(BackendPatternConfig()); }).find("needs a pattern"),
            std::string::npos);
  auto complex_fused = BackendPatternConfig()
                           ._set_pattern_complex_format({"torch.add", {"torch.nn.Conv2d", "MatchAllNode"}})
                           .set_fused_module("torch.ao.nn.intrinsic.ConvAdd2d");
  EXPECT_NE(error_of([&] { config.set_backend_pattern_config(complex_fused); }).find("or a fuser_method"),
            std::string::npos);
  // With a fuser method it is fine (onednn's conv + add).
  config.set_backend_pattern_config(complex_fused.set_fuser_method("_fuse_conv_add_left"));
  EXPECT_EQ(config.configs().size(), 1u);
}

class BuiltinBackend : public ::testing::TestWithParam<std::string> {};

TEST_P(BuiltinBackend, JsonRoundTrip) {
  BackendConfig config = get_backend_config(GetParam());
  json j = backend_config_to_json(config);
  BackendConfig back = backend_config_from_json(j);
  EXPECT_TRUE(back == config);
  EXPECT_EQ(backend_config_to_json(back), j);
  EXPECT_EQ(back.name(), GetParam());
}

INSTANTIATE_TEST_SUITE_P(All, BuiltinBackend,
                         ::testing::Values("native", "fbgemm", "qnnpack", "x86", "onednn", "executorch", "tensorrt",
                                           "onnxruntime"));

TEST(BuiltinBackend, Sizes) {
  // PyTorch 1.13's native config has 185 pattern configs (its repeated
  // conv-relu configs replace earlier ones); qfx's adds nn.GRU, as 2.x does.
  EXPECT_EQ(get_native_backend_config().configs().size(), 186u);
  EXPECT_NE(error_of([] { get_backend_config("fbgemn"); }).find("unknown backend \"fbgemn\" (built-in: native,"),
            std::string::npos);
}

/// The error of reading `text` as a backend config, path first.
std::string read_error(const std::string& text) {
  return error_of([&] { backend_config_from_json(json::parse(text)); });
}

TEST(BackendConfigJson, ErrorsNameTheJsonPath) {
  const std::string linear = R"({"pattern": "torch.nn.Linear"})";
  EXPECT_NE(read_error(R"({"configs": [)" + linear +
                       R"(, {"pattern": "torch.nn.Conv2d", "dtype_configs": [{"input_dtype": "torch.quint9"}]}]})")
                .find("configs[1].dtype_configs[0].input_dtype: unknown dtype \"torch.quint9\""),
            std::string::npos);
  EXPECT_NE(read_error(R"({"configs": [{"pattern": "torch.nn.Linear", "colour": 1}]})")
                .find("configs[0]: unknown key \"colour\""),
            std::string::npos);
  EXPECT_NE(read_error(R"({"configs": [{"pattern": ["torch.nn.Conv2d", "torch.nn.Relu"]}]})")
                .find("configs[0].pattern[1]: unknown op \"torch.nn.Relu\""),
            std::string::npos);
  EXPECT_NE(
      read_error(R"({"configs": [{"pattern": ["torch.nn.Conv2d", "torch.nn.BatchNorm2d", "torch.nn.ReLU", "relu"]}]})")
          .find("configs[0].pattern: a sequence pattern has 2 or 3 ops, got 4"),
      std::string::npos);
  EXPECT_NE(read_error(R"({"configs": [{"pattern": "torch.nn.Linear", "root_module": "torch.nn.Linar"}]})")
                .find("configs[0].root_module: unknown module type \"torch.nn.Linar\""),
            std::string::npos);
  EXPECT_NE(read_error(R"({"configs": [{"pattern_complex_format": ["torch.add", "torch.nn.Conv2d", "MatchAllNode"],
                                        "fused_module": "torch.ao.nn.intrinsic.ConvAdd2d"}]})")
                .find("configs[0]: pattern torch.add(torch.nn.Conv2d, MatchAllNode): fused_module"),
            std::string::npos);
  EXPECT_NE(read_error(R"({"configs": [{"pattern": "torch.nn.Linear", "root_node_getter": "my_getter"}]})")
                .find("configs[0].root_node_getter: unknown root node getter \"my_getter\""),
            std::string::npos);
  EXPECT_NE(read_error(R"({"configs": [{"pattern": "torch.nn.Linear", "pattern_complex_format": "torch.nn.Linear"}]})")
                .find("configs[0]: give exactly one of"),
            std::string::npos);
  EXPECT_NE(
      read_error(R"({"configs": [{"pattern_complex_format": ["torch.nn.ReLU", ["torch.add", "torch.nn.Conv3x"]]}]})")
          .find("configs[0].pattern_complex_format[1][1]: unknown op \"torch.nn.Conv3x\""),
      std::string::npos);
  EXPECT_NE(read_error(R"({"configs": [{"pattern": "torch.nn.Linear", "observation_type": "SHARE"}]})")
                .find("configs[0].observation_type: unknown observation type \"SHARE\""),
            std::string::npos);
  EXPECT_NE(
      read_error(
          R"({"configs": [{"pattern": "torch.nn.Linear", "dtype_configs": [{"input_dtype": {"dtype": "torch.quint8", "quant_min_lower_bound": "0"}}]}]})")
          .find("configs[0].dtype_configs[0].input_dtype.quant_min_lower_bound: expected an integer"),
      std::string::npos);
  EXPECT_NE(read_error(R"({"name": "b", "configs": {}})").find("configs: expected a list"), std::string::npos);
  EXPECT_NE(read_error(R"({"name": "b", "patterns": []})").find("<root>: unknown key \"patterns\""), std::string::npos);
  EXPECT_NE(
      read_error(
          R"({"configs": [{"pattern": "torch.nn.Linear", "overwrite_output_observer": {"type": "NoSuchObserver"}}]})")
          .find("configs[0].overwrite_output_observer.type: unknown observer class"),
      std::string::npos);
}

TEST(BackendConfigJson, ReadsPyTorch113Keys) {
  json j = json::parse(R"({"name": "b", "configs": [{"pattern": "torch.nn.Linear",
      "observation_type": "ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT",
      "reference_quantized_module_for_root": "torch.nn.quantized._reference.Linear",
      "num_tensor_args_to_observation_type": {"0": "OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT"},
      "input_type_to_index": {"weight": 1, "bias": 2}, "input_output_observed": false}]})");
  const BackendConfig config = backend_config_from_json(j);
  const BackendPatternConfig& c = config.configs()[0];
  EXPECT_EQ(c.observation_type(), ObservationType::OUTPUT_SHARE_OBSERVER_WITH_INPUT);
  EXPECT_EQ(c.reference_quantized_module(), "torch.ao.nn.quantized.reference.Linear");
  EXPECT_EQ(c.num_tensor_args_to_observation_type().at(0), ObservationType::OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT);
  EXPECT_EQ(c.input_type_to_index().at("bias"), 2);
  EXPECT_EQ(c.input_output_observed(), false);
  json written = pattern_config_to_json(c);
  EXPECT_TRUE(written.contains("reference_quantized_module"));
  EXPECT_FALSE(written.contains("reference_quantized_module_for_root"));
}

TEST(BackendConfigJson, ConstrainedDtypesAndNewObservationType) {
  DTypeWithConstraints fixed = c10::kQUInt8;
  fixed.scale_exact_match = 1.0 / 256;
  fixed.zero_point_exact_match = 0;
  BackendConfig config("b");
  config.set_backend_pattern_config(BackendPatternConfig("torch.nn.Sigmoid")
                                        .set_observation_type(ObservationType::INPUT_OUTPUT_NOT_OBSERVED)
                                        .add_dtype_config({fixed, fixed}));
  json j = backend_config_to_json(config);
  EXPECT_EQ(j["configs"][0]["dtype_configs"][0]["input_dtype"],
            json::parse(R"({"dtype": "torch.quint8", "scale_exact_match": 0.00390625, "zero_point_exact_match": 0})"));
  EXPECT_EQ(j["configs"][0]["observation_type"], "INPUT_OUTPUT_NOT_OBSERVED");
  EXPECT_TRUE(backend_config_from_json(j) == config);
}

TEST(BackendConfigJson, LoadFileErrorsNameTheFile) {
  EXPECT_NE(error_of([] { load_backend_config("/nonexistent/b.json"); }).find("cannot open '/nonexistent/b.json'"),
            std::string::npos);
  std::string path = ::testing::TempDir() + "qfx_bad_backend.json";
  std::ofstream(path)
      << R"({"configs": [{"pattern": "torch.nn.Linear", "dtype_configs": [{"weight_dtype": "torch.int9"}]}]})";
  EXPECT_NE(error_of([&] {
              load_backend_config(path);
            }).find(path + ": configs[0].dtype_configs[0].weight_dtype: unknown dtype \"torch.int9\""),
            std::string::npos);
  std::ofstream(path) << "{\"configs\": [";
  EXPECT_NE(error_of([&] { load_backend_config(path); }).find("not valid JSON"), std::string::npos);
}

}  // namespace
}  // namespace qfx::backend
