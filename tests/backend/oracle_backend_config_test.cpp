// The built-in BackendConfigs against PyTorch's (backend_fixtures.py): every
// pattern config, in order, as JSON; and the tutorial's custom backend,
// written in C++ and read from its JSON file.

#include "qfx/backend/backend_json.h"
#include "qfx/backend/builtin_backends.h"
#include "support/fixtures.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace qfx::backend {
namespace {

using nlohmann::json;

/// Compares two backend JSONs config by config, naming the first differences.
void expect_same_configs(const json& actual, const json& expected) {
  EXPECT_EQ(actual["name"], expected["name"]);
  const json& a = actual["configs"];
  const json& e = expected["configs"];
  ASSERT_EQ(a.size(), e.size()) << "number of pattern configs";
  int reported = 0;
  for (size_t i = 0; i < a.size() && reported < 5; ++i) {
    if (a[i] == e[i]) continue;
    ++reported;
    ADD_FAILURE() << "configs[" << i << "] differs\n  qfx:     " << a[i].dump() << "\n  PyTorch: " << e[i].dump();
  }
}

class OracleBackendConfig : public ::testing::TestWithParam<std::string> {};

TEST_P(OracleBackendConfig, EqualsPyTorchPatternByPattern) {
  json expected = test::fixture_json("backend_configs.json")[GetParam()];
  expect_same_configs(backend_config_to_json(get_backend_config(GetParam())), expected);
}

TEST_P(OracleBackendConfig, PyTorchJsonReadsAsTheBuiltin) {
  json expected = test::fixture_json("backend_configs.json")[GetParam()];
  EXPECT_TRUE(backend_config_from_json(expected) == get_backend_config(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Builtins, OracleBackendConfig,
                         ::testing::Values("native", "fbgemm", "qnnpack", "x86", "onednn", "executorch", "tensorrt"));

/// The tutorial's backend (seed 002), built with the C++ API.
BackendConfig tutorial_backend() {
  DTypeWithConstraints quint8_with_constraints = c10::kQUInt8;
  quint8_with_constraints.quant_min_lower_bound = 0;
  quint8_with_constraints.quant_max_upper_bound = 255;
  quint8_with_constraints.scale_min_lower_bound = std::pow(2.0, -12);
  DTypeConfig weighted_int8{quint8_with_constraints, quint8_with_constraints, c10::kQInt8, c10::kFloat};
  auto linear_config = BackendPatternConfig()
                           .set_pattern("torch.nn.Linear")
                           .set_observation_type(ObservationType::OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT)
                           .add_dtype_config(weighted_int8)
                           .set_root_module("torch.nn.Linear")
                           .set_qat_module("torch.nn.qat.Linear")
                           .set_reference_quantized_module("torch.ao.nn.quantized.reference.Linear");
  auto conv_relu_config = BackendPatternConfig()
                              .set_pattern({"torch.nn.Conv2d", "torch.nn.ReLU"})
                              .set_fused_module("torch.ao.nn.intrinsic.ConvReLU2d");
  auto fused_conv_relu_config = BackendPatternConfig()
                                    .set_pattern("torch.ao.nn.intrinsic.ConvReLU2d")
                                    .set_observation_type(ObservationType::OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT)
                                    .add_dtype_config(weighted_int8)
                                    .set_root_module("torch.nn.Conv2d")
                                    .set_qat_module("torch.ao.nn.intrinsic.qat.ConvReLU2d")
                                    .set_reference_quantized_module("torch.ao.nn.quantized.reference.Conv2d");
  return BackendConfig("my_backend")
      .set_backend_pattern_config(linear_config)
      .set_backend_pattern_config(conv_relu_config)
      .set_backend_pattern_config(fused_conv_relu_config);
}

TEST(OracleTutorialBackend, CppBuilderEqualsPyTorch) {
  expect_same_configs(backend_config_to_json(tutorial_backend()),
                      test::fixture_json("backend_configs.json")["my_backend"]);
}

TEST(OracleTutorialBackend, ExampleFileEqualsPyTorch) {
  BackendConfig from_file = load_backend_config(test::source_file("examples/backends/my_backend.json"));
  expect_same_configs(backend_config_to_json(from_file), test::fixture_json("backend_configs.json")["my_backend"]);
  EXPECT_TRUE(from_file == tutorial_backend());
}

}  // namespace
}  // namespace qfx::backend
