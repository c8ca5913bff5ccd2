// QConfig, QConfigMapping and their JSON: resolution rules, round trips, and
// errors that name the JSON path.

#include "support/fixtures.h"

#include "qfx/quant/qconfig_json.h"
#include "qfx/quant/qtypes.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>

namespace qfx::quant {
namespace {

using test::error_of;

QConfig labelled(double eps) {
  return QConfig{ObserverSpec("MinMaxObserver", {{"eps", eps}}), *observer_preset("default_weight_observer")};
}

TEST(QTypes, CalculateQMinQMaxFollowsPyTorch) {
  EXPECT_EQ(calculate_qmin_qmax(c10::nullopt, c10::nullopt, c10::kQUInt8, false), std::make_pair(0L, 255L));
  EXPECT_EQ(calculate_qmin_qmax(c10::nullopt, c10::nullopt, c10::kQUInt8, true), std::make_pair(0L, 127L));
  EXPECT_EQ(calculate_qmin_qmax(c10::nullopt, c10::nullopt, c10::kQInt8, true), std::make_pair(-64L, 63L));
  // An explicit range is halved with Python's floor division.
  EXPECT_EQ(calculate_qmin_qmax(-127, 127, c10::kQInt8, true), std::make_pair(-64L, 63L));
  EXPECT_EQ(calculate_qmin_qmax(-3, 5, c10::kQUInt8, true), std::make_pair(-2L, 2L));
  EXPECT_THROW(calculate_qmin_qmax(-200, 127, c10::kQInt8, false), c10::Error);
}

TEST(QConfigMapping, ResolutionOrder) {
  QConfigMapping m;
  m.set_global(labelled(1e-1))
      .set_object_type("torch.nn.Conv2d", labelled(1e-2))
      .set_module_name_regex("block\\..*", labelled(1e-3))
      .set_module_name("block.1", labelled(1e-4))
      .set_module_name("block.1.inner", std::nullopt)
      .set_module_name_object_type_order("block", "torch.nn.Conv2d", 1, labelled(1e-5));
  const QConfigAny& global = m.global_qconfig();
  EXPECT_EQ(m.module_type_or_name_qconfig("torch.nn.Linear", "head", global), labelled(1e-1));
  EXPECT_EQ(m.module_type_or_name_qconfig("torch.nn.Conv2d", "head", global), labelled(1e-2));
  EXPECT_EQ(m.module_type_or_name_qconfig("torch.nn.Conv2d", "block.0", global), labelled(1e-3));
  EXPECT_EQ(m.module_type_or_name_qconfig("torch.nn.Conv2d", "block.1.conv", global), labelled(1e-4));  // ancestor
  EXPECT_EQ(m.module_type_or_name_qconfig("torch.nn.Conv2d", "block.1.inner.x", global), std::nullopt);
  EXPECT_EQ(m.module_type_or_name_qconfig("torch.nn.Conv2d", "xblock.0", global), labelled(1e-2));  // re.match
  EXPECT_EQ(m.module_name_object_type_order_qconfig("block", "torch.nn.Conv2d", 1, global), labelled(1e-5));
  EXPECT_EQ(m.module_name_object_type_order_qconfig("block", "torch.nn.Conv2d", 0, global), global);
  // Setting a key again replaces the entry in place.
  m.set_object_type("torch.nn.Conv2d", labelled(1e-6));
  EXPECT_EQ(m.object_type_qconfigs().size(), 1u);
  EXPECT_EQ(m.object_type_qconfig("torch.nn.Conv2d", global), labelled(1e-6));
}

TEST(QConfigMapping, RegexMatchesAtTheStartAsPythonsReMatch) {
  auto m = QConfigMapping()
               .set_module_name_regex("features\\.0\\..*", labelled(0.5))
               .set_module_name_regex("cla", labelled(0.25));
  EXPECT_EQ(m.module_name_regex_qconfig("features.0.conv", std::nullopt), labelled(0.5));
  EXPECT_EQ(m.module_name_regex_qconfig("x.features.0.conv", std::nullopt), std::nullopt);  // not a search
  EXPECT_EQ(m.module_name_regex_qconfig("classifier", std::nullopt), labelled(0.25));       // a prefix is enough
  EXPECT_EQ(m.module_name_regex_qconfig("features.1.conv", std::nullopt), std::nullopt);
}

TEST(QConfigMapping, RegexCostIsBoundedByTheNameLength) {
  // Exponential for a backtracking matcher on a name of 40 'a's and a '!'.
  auto m = QConfigMapping().set_module_name_regex("(a+)+$", labelled(0.5));
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(m.module_name_regex_qconfig(std::string(40, 'a') + "!", std::nullopt), std::nullopt);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // A 100,000-character pattern compiles or is refused; either way no crash.
  std::string huge(100000, '(');
  EXPECT_THROW(QConfigMapping().set_module_name_regex(huge, labelled(0.5)), c10::Error);
  std::string long_literal(100000, 'a');
  auto long_mapping = QConfigMapping().set_module_name_regex(long_literal, labelled(0.5));
  EXPECT_EQ(long_mapping.module_name_regex_qconfig(long_literal, std::nullopt), labelled(0.5));
}

TEST(QConfigJson, FilesNestedTooDeepOrWithHugeNumbersAreErrorsNamingTheFile) {
  std::string path = ::testing::TempDir() + "/deep.json";
  auto error_of = [&](const std::string& text) {
    std::ofstream(path) << text;
    try {
      load_json_file(path);
    } catch (const c10::Error& e) {
      return std::string(e.what_without_backtrace());
    }
    return std::string("no error");
  };
  std::string deep = error_of(std::string(100000, '[') + std::string(100000, ']'));
  EXPECT_NE(deep.find(path + ": JSON nested deeper than 64 levels"), std::string::npos) << deep;
  std::string huge = error_of(R"({"": {"activation": {"type": "MinMaxObserver", "args": {"eps": 1e999}}}})");
  EXPECT_NE(huge.find(path + ": not valid JSON"), std::string::npos) << huge;
  EXPECT_EQ(error_of(std::string(60, '[') + std::string(60, ']')), "no error");
}

TEST(QConfigJson, RoundTrips) {
  for (const char* backend : {"fbgemm", "x86", "qnnpack", "onednn"}) {
    for (const QConfigMapping& m : {get_default_qconfig_mapping(backend), get_default_qat_qconfig_mapping(backend)}) {
      nlohmann::json j = qconfig_mapping_to_json(m);
      EXPECT_EQ(qconfig_mapping_to_json(qconfig_mapping_from_json(j)), j) << backend;
    }
  }
  auto custom = QConfigMapping()
                    .set_global(std::nullopt)
                    .set_module_name_regex("a.*", labelled(0.5))
                    .set_module_name("x", *qconfig_preset("float16_static_qconfig"))
                    .set_module_name_object_type_order("", "operator.add", 2, labelled(0.25));
  nlohmann::json j = qconfig_mapping_to_json(custom);
  EXPECT_EQ(qconfig_mapping_to_json(qconfig_mapping_from_json(j)), j);
}

TEST(QConfigJson, PresetNames) {
  auto j = nlohmann::json::parse(
      R"({"": "default:onednn", "object_type": [["torch.nn.Linear", "default_dynamic_qconfig"]]})");
  QConfigMapping m = qconfig_mapping_from_json(j);
  EXPECT_EQ(m.global_qconfig(), get_default_qconfig("onednn"));
  EXPECT_EQ(m.object_type_qconfig("torch.nn.Linear", std::nullopt), qconfig_preset("default_dynamic_qconfig"));
  EXPECT_EQ(qconfig_mapping_to_json(qconfig_mapping_from_json("qat:qnnpack")),
            qconfig_mapping_to_json(get_default_qat_qconfig_mapping("qnnpack")));
  auto spec =
      spec_from_json(nlohmann::json::parse(R"({"type": "HistogramObserver", "args": {"reduce_range": true}})"), "");
  EXPECT_EQ(spec.type(), "torch.ao.quantization.observer.HistogramObserver");
}

TEST(QConfigJson, ErrorsNameTheJsonPath) {
  auto from = [](const char* text) {
    return error_of([&] { qconfig_mapping_from_json(nlohmann::json::parse(text)); });
  };
  EXPECT_NE(
      from(
          R"({"object_type": [["torch.nn.Linear", {"activation": {"type": "MinMaxObserver", "args": {"dtype": "torch.quint9"}}, "weight": "default_weight_observer"}]]})")
          .find("object_type[0][1].activation.args.dtype: unknown dtype \"torch.quint9\""),
      std::string::npos);
  EXPECT_NE(from(R"({"objekt_type": []})").find("unknown key \"objekt_type\""), std::string::npos);
  EXPECT_NE(from(R"({"": {"activation": "NoSuchObserver", "weight": "default_weight_observer"}})")
                .find("\"\".activation: unknown observer \"NoSuchObserver\""),
            std::string::npos);
  EXPECT_NE(
      from(
          R"({"": {"activation": {"type": "MinMaxObserver", "args": {"bins": 3}}, "weight": "default_weight_observer"}})")
          .find("MinMaxObserver has no argument 'bins'"),
      std::string::npos);
  EXPECT_NE(
      from(
          R"({"": {"activation": {"type": "MinMaxObserver", "args": {"reduce_range": 3}}, "weight": "default_weight_observer"}})")
          .find("argument 'reduce_range' must be a bool"),
      std::string::npos);
  EXPECT_NE(from(R"({"module_name_regex": [["([", null]]})")
                .find("module_name_regex[0]: module_name_regex '([' is not a valid regex"),
            std::string::npos);
  EXPECT_NE(from(R"("fast:onednn")").find("unknown qconfig mapping preset \"fast:onednn\""), std::string::npos);
}

TEST(ObserverSpec, WithArgsOverridesAndEqualityIgnoresOrder) {
  ObserverSpec a("MinMaxObserver", {{"dtype", c10::kQInt8}, {"quant_min", -127}});
  ObserverSpec b("torch.ao.quantization.observer.MinMaxObserver", {{"quant_min", -127}, {"dtype", c10::kQInt8}});
  EXPECT_EQ(a, b);
  EXPECT_NE(a, a.with_args({{"quant_min", -128}}));
  EXPECT_EQ(*a.with_args({{"quant_min", -128}}).arg("quant_min"), SpecValue(-128));
  EXPECT_EQ(SpecValue(1), SpecValue(1.0));  // Python: 1 == 1.0
  EXPECT_NE(error_of([] { ObserverSpec("NoSuchObserver"); }).find("unknown observer class \"NoSuchObserver\""),
            std::string::npos);
  EXPECT_NE(error_of([] {
              ObserverSpec("MinMaxObserver", {{"qscheme", c10::kPerChannelAffine}}).make();
            }).find("MinMaxObserver's qscheme must be"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              ObserverSpec("MinMaxObserver", {{"quant_min", 3}, {"quant_max", 9}}).make();
            }).find("must include 0"),
            std::string::npos);
}

TEST(Observer, NoDataGivesPyTorchDefaultsWithOneWarningNamingIt) {
  for (const char* type : {"MinMaxObserver", "HistogramObserver", "PerChannelMinMaxObserver"}) {
    auto observer = ObserverSpec(type).make();
    observer->set_label("activation_post_process_7");
    std::vector<std::string> messages;
    {
      test::WarningCapture capture;
      QParams q = observer->calculate_qparams();
      EXPECT_EQ(q.scale.item<double>(), 1.0);
      EXPECT_EQ(q.zero_point.item<int64_t>(), 0);
      messages = capture.messages();
    }
    ASSERT_EQ(messages.size(), 1u) << type;
    EXPECT_NE(messages[0].find(std::string(type) + " 'activation_post_process_7': no data was observed"),
              std::string::npos)
        << messages[0];
  }
}

}  // namespace
}  // namespace qfx::quant
