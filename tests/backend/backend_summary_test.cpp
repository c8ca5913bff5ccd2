// Support tables: the kind of each DTypeConfig and the rows of a config.

#include "qfx/backend/backend_summary.h"
#include "qfx/backend/builtin_backends.h"

#include <gtest/gtest.h>

namespace qfx::backend {
namespace {

TEST(BackendSummary, KindOfEachDTypeConfig) {
  DTypeConfig static_int8{c10::kQUInt8, c10::kQUInt8, c10::kQInt8, c10::kFloat};
  DTypeConfig dynamic_int8{c10::kQUInt8, c10::kFloat, c10::kQInt8, c10::kFloat, true};
  DTypeConfig dynamic_fp16{c10::kHalf, c10::kFloat, c10::kHalf, c10::kFloat, true};
  DTypeConfig weight_only{c10::kFloat, c10::kFloat, c10::kQUInt4x2};
  DTypeConfig fp16{c10::kHalf, c10::kHalf, c10::kHalf, c10::kHalf};
  EXPECT_EQ(support_kind(static_int8), SupportKind::kStatic);
  EXPECT_EQ(support_kind(dynamic_int8), SupportKind::kDynamic);
  EXPECT_EQ(support_kind(dynamic_fp16), SupportKind::kDynamic);
  EXPECT_EQ(support_kind(weight_only), SupportKind::kWeightOnly);
  EXPECT_EQ(support_kind(fp16), SupportKind::kFloat16);
  EXPECT_EQ(dtype_config_label(static_int8), "quint8, w qint8");
  EXPECT_EQ(dtype_config_label(dynamic_fp16), "float16, w float16");
  EXPECT_EQ(dtype_config_label(weight_only), "w quint4x2");
  DTypeWithConstraints constrained = c10::kQInt8;
  constrained.quant_min_lower_bound = -127;
  EXPECT_EQ(dtype_config_label(DTypeConfig{constrained, constrained}), "qint8*");
}

TEST(BackendSummary, OneRowPerPatternInConfigOrder) {
  BackendConfig config("b");
  config.set_backend_pattern_config(BackendPatternConfig("torch.nn.Embedding")
                                        .add_dtype_config({c10::kFloat, c10::kFloat, c10::kQUInt8})
                                        .add_dtype_config({c10::kFloat, c10::kFloat, c10::kQUInt4x2}));
  config.set_backend_pattern_config(BackendPatternConfig()
                                        .set_pattern({"torch.nn.Conv2d", "torch.nn.ReLU"})
                                        .set_fused_module("torch.ao.nn.intrinsic.ConvReLU2d"));
  config.set_backend_pattern_config(
      BackendPatternConfig("torch.cat").set_observation_type(ObservationType::OUTPUT_SHARE_OBSERVER_WITH_INPUT));
  std::vector<PatternSupport> rows = summarize(config);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].pattern, "torch.nn.Embedding");
  EXPECT_EQ(rows[0].dtypes[static_cast<size_t>(SupportKind::kWeightOnly)],
            (std::vector<std::string>{"w quint8", "w quint4x2"}));
  EXPECT_TRUE(rows[0].dtypes[static_cast<size_t>(SupportKind::kStatic)].empty());
  EXPECT_EQ(rows[1].pattern, "torch.nn.Conv2d -> torch.nn.ReLU");
  EXPECT_EQ(rows[1].fused_module, "torch.ao.nn.intrinsic.ConvReLU2d");
  EXPECT_EQ(rows[2].pattern, "torch.cat");
  EXPECT_EQ(rows[2].observation, "shares input's");
  std::string table = support_table_markdown(config);
  EXPECT_NE(table.find("| `torch.nn.Embedding` |  |  | w quint8; w quint4x2 |  | own observer |  |\n"),
            std::string::npos)
      << table;
}

TEST(BackendSummary, BuiltinsDocumentEveryPattern) {
  std::string docs = builtin_backends_markdown();
  for (const std::string& name : builtin_backend_names()) {
    BackendConfig config = get_backend_config(name);
    EXPECT_NE(
        docs.find("`get_" + name + "_backend_config()`: " + std::to_string(config.configs().size()) + " patterns."),
        std::string::npos)
        << name;
  }
  EXPECT_NE(docs.find("| [native](#native) | 186 |"), std::string::npos);
}

}  // namespace
}  // namespace qfx::backend
