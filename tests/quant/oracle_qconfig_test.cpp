// QConfig presets, default QConfigMappings and resolution against PyTorch:
// the JSON of each equals the oracle's conversion of PyTorch's own objects,
// and generate_qconfig_map gives each node of a nested model the qconfig
// PyTorch's generate_qconfig_map gives it.

#include "support/fixtures.h"

#include "qfx/io/torchscript_import.h"
#include "qfx/quant/qconfig_json.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace qfx::quant {
namespace {

TEST(OracleQConfig, DefaultMappingsEqualPyTorchs) {
  auto mappings = test::fixture_json("qconfig_mappings.json");
  for (const char* backend : {"fbgemm", "x86", "qnnpack", "onednn"}) {
    std::string b = backend;
    EXPECT_EQ(qconfig_mapping_to_json(get_default_qconfig_mapping(b)), mappings["default:" + b]) << b;
    EXPECT_EQ(qconfig_mapping_to_json(get_default_qat_qconfig_mapping(b)), mappings["qat:" + b]) << b;
    EXPECT_EQ(qconfig_mapping_to_json(get_default_qat_qconfig_mapping(b, 0)), mappings["qat_v0:" + b]) << b;
  }
}

TEST(OracleQConfig, PresetsEqualPyTorchs) {
  auto qconfigs = test::fixture_json("qconfig_presets.json");
  for (const std::string& name : qconfig_preset_names()) {
    ASSERT_TRUE(qconfigs.contains(name)) << name << " is not a PyTorch preset";
    EXPECT_EQ(qconfig_to_json(*qconfig_preset(name)), qconfigs[name]) << name;
  }
  EXPECT_EQ(qconfig_to_json(get_default_qconfig("other")), qconfigs["default:other"]);
  EXPECT_EQ(qconfig_to_json(get_default_qat_qconfig("other")), qconfigs["qat:other"]);
  auto observers = test::fixture_json("observer_presets.json");
  for (const std::string& name : observer_preset_names()) {
    ASSERT_TRUE(observers.contains(name)) << name << " is not a PyTorch preset";
    EXPECT_EQ(spec_to_json(*observer_preset(name)), observers[name]) << name;
  }
}

TEST(OracleQConfig, ResolutionMatchesGenerateQConfigMap) {
  auto fixture = test::fixture_json("resolution.json");
  QConfigMapping mapping = qconfig_mapping_from_json(fixture["mapping"]);
  std::vector<QConfigAny> labels;
  for (const auto& q : fixture["qconfigs"]) labels.push_back(qconfig_from_json(q, "qconfigs"));
  auto gm = io::import_torchscript(test::fixture("resolution_model.pt"));
  auto resolved = generate_qconfig_map(*gm, mapping);
  size_t checked = 0;
  for (const ir::Node* node : gm->graph().nodes()) {
    SCOPED_TRACE(node->name());
    ASSERT_TRUE(fixture["nodes"].contains(node->name()));
    const auto& expected = fixture["nodes"][node->name()];
    const QConfigAny& ours = resolved.at(node);
    if (expected.is_null()) {
      EXPECT_FALSE(ours.has_value());
    } else {
      ASSERT_TRUE(ours.has_value());
      EXPECT_EQ(*ours, *labels[expected.get<size_t>()]);
    }
    ++checked;
  }
  EXPECT_EQ(checked, fixture["nodes"].size());
}

}  // namespace
}  // namespace qfx::quant
