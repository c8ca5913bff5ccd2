// Passes in IR: the registry and PassManager, and insert-observers' rules
// that the oracle cases do not reach (rejections with their warnings).

#include "qfx/backend/backend_json.h"
#include "qfx/ir/graph_module.h"
#include "qfx/ir/parser.h"
#include "qfx/passes/pass_manager.h"
#include "qfx/passes/prepare_state.h"
#include "support/fixtures.h"
#include "support/warnings.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <sstream>

namespace qfx::passes {
namespace {

using test::WarningCollector;

std::unique_ptr<ir::GraphModule> linear_sigmoid() {
  auto gm = std::make_unique<ir::GraphModule>(ir::make_container_module(), ir::parse_graph(R"(graph():
    %x : [num_users=1] = placeholder[target=x]
    %linear : [num_users=1] = call_module[target=linear](args = (%x,), kwargs = {})
    %sigmoid : [num_users=1] = call_module[target=sigmoid](args = (%linear,), kwargs = {})
    return sigmoid)"));
  gm->add_submodule("linear", torch::nn::Linear(4, 4).ptr());
  gm->add_submodule("sigmoid", torch::nn::Sigmoid().ptr());
  return gm;
}

InsertObserversOptions global_qconfig(const quant::QConfig& qconfig) {
  InsertObserversOptions options;
  options.qconfig_mapping = std::make_shared<quant::QConfigMapping>(quant::QConfigMapping().set_global(qconfig));
  return options;
}

TEST(PassRegistry, NamesAndErrors) {
  EXPECT_STREQ(find_pass("fuse").name, "fuse");
  EXPECT_NE(test::error_of([] { find_pass("fusion"); }).find("unknown pass \"fusion\" (passes: fuse, "),
            std::string::npos);
  EXPECT_NE(test::error_of([] { PassManager().add_list("fuse,,dce"); }).find("empty pass name"), std::string::npos);
  EXPECT_EQ(PassManager().add_list("fuse,insert-observers,dce").passes().size(), 3u);
}

TEST(PassManager, PrintsAfterEachPass) {
  auto gm = linear_sigmoid();
  std::ostringstream out;
  PassManager().add("fuse").add("dce").print_after_all(out).run(*gm, {});
  std::string text = out.str();
  EXPECT_EQ(text.rfind("// after fuse\ngraph():", 0), 0u) << text;
  EXPECT_NE(text.find("// after dce\ngraph():"), std::string::npos) << text;
}

TEST(PassManager, TimesEachPassAndItsLint) {
  auto gm = linear_sigmoid();
  std::vector<PassTime> times;
  PassManager manager;
  manager.add("fuse").add("dce").time_passes(times).run(*gm, {});
  manager.set_lint(false).run(*gm, {});
  ASSERT_EQ(times.size(), 4u);
  std::vector<std::string> names;
  for (const PassTime& t : times) names.push_back(t.pass);
  EXPECT_EQ(names, (std::vector<std::string>{"fuse", "dce", "fuse", "dce"}));
  EXPECT_GT(times[0].seconds, 0.0);
  EXPECT_GT(times[0].lint_seconds, 0.0);
  EXPECT_EQ(times[2].lint_seconds, 0.0);  // lint off
  EXPECT_EQ(times[3].lint_seconds, 0.0);
  std::ostringstream out;
  print_pass_times(out, {{"fuse", 0.75, 0.25}, {"insert-observers", 2.5, 0.5}});
  EXPECT_EQ(out.str(),
            "fuse                0.7500 s  lint   0.2500 s   25.0%\n"
            "insert-observers    2.5000 s  lint   0.5000 s   75.0%\n"
            "total               3.2500 s  lint   0.7500 s  100.0%\n");
}

TEST(InsertObservers, FixedQParamsOpWithoutItsObserverStaysFloatWithAWarning) {
  auto gm = linear_sigmoid();
  WarningCollector warnings;
  insert_observers(*gm, global_qconfig(quant::get_default_qconfig("onednn")));
  // linear is observed on both sides; sigmoid gets no observer of its own
  std::vector<std::string> targets;
  for (const ir::Node* n : gm->graph().nodes()) targets.push_back(n->target());
  EXPECT_EQ(targets, (std::vector<std::string>{"x", "activation_post_process_0", "linear", "activation_post_process_1",
                                               "sigmoid", "output"}));
  EXPECT_TRUE(node_is_observed(*gm->graph().find_node("linear")));
  EXPECT_FALSE(node_is_observed(*gm->graph().find_node("sigmoid")));
  ASSERT_EQ(warnings.messages.size(), 1u);
  EXPECT_NE(warnings.messages[0].find("%sigmoid (torch.nn.Sigmoid) stays float: the fixed-qparams op needs"),
            std::string::npos)
      << warnings.messages[0];
}

TEST(InsertObservers, ValueFeedingAShapeArgumentStaysFloatNamingTheShapeOp) {
  // view's shape arguments are ints (PyTorch's propagate_dtypes_for_known_nodes):
  // size shares its input's observer, so contiguous, which size reads, is marked int too
  auto gm = std::make_unique<ir::GraphModule>(ir::make_container_module(), ir::parse_graph(R"(graph():
    %x : [num_users=1] = placeholder[target=x]
    %contiguous : [num_users=2] = call_method[target=contiguous](args = (%x,), kwargs = {})
    %size : [num_users=1] = call_method[target=size](args = (%contiguous, 0), kwargs = {})
    %view : [num_users=1] = call_method[target=view](args = (%contiguous, %size, -1), kwargs = {})
    return view)"));
  WarningCollector warnings;
  insert_observers(*gm, global_qconfig(quant::get_default_qconfig("onednn")));
  std::string all;
  for (const std::string& message : warnings.messages) all += message + "\n";
  EXPECT_NE(all.find("prepare: %contiguous (contiguous) stays float: input dtype int is not the backend's "
                     "torch.quint8 (set by %view's view arguments)\n"),
            std::string::npos)
      << all;
  // size gives a Python number, which is never quantized: nothing to warn about
  EXPECT_EQ(all.find("%size"), std::string::npos) << all;
}

TEST(InsertObservers, ValuesFeedingShapeArgumentsGiveOneWarning) {
  // a transformer reads many sizes: one line for all, the report has each node's reason
  auto gm = std::make_unique<ir::GraphModule>(ir::make_container_module(), ir::parse_graph(R"(graph():
    %x : [num_users=3] = placeholder[target=x]
    %contiguous : [num_users=1] = call_method[target=contiguous](args = (%x,), kwargs = {})
    %size : [num_users=1] = call_method[target=size](args = (%contiguous, 0), kwargs = {})
    %transpose : [num_users=1] = call_method[target=transpose](args = (%x, 0, 1), kwargs = {})
    %size_1 : [num_users=1] = call_method[target=size](args = (%transpose, 1), kwargs = {})
    %view : [num_users=1] = call_method[target=view](args = (%x, %size, %size_1), kwargs = {})
    return view)"));
  WarningCollector warnings;
  insert_observers(*gm, global_qconfig(quant::get_default_qconfig("onednn")));
  ASSERT_EQ(warnings.messages.size(), 1u);
  EXPECT_EQ(warnings.messages[0],
            "prepare: 2 nodes whose values a shape op reads as sizes stay float, the first: %contiguous (contiguous) "
            "stays float: input dtype int is not the backend's torch.quint8 (set by %view's view arguments)");
  EXPECT_EQ(std::any_cast<std::string>(gm->graph().find_node("transpose")->meta().at(kFloatReasonMeta)),
            "input dtype int is not the backend's torch.quint8 (set by %view's view arguments)");
}

/// The warnings insert-observers gives for linear -> sigmoid under onednn's
/// default qconfig (quant range 0..255, eps float32's) with a backend that
/// runs torch.nn.Linear only under `input_constraints`.
std::string constraint_warning(const std::string& input_constraints) {
  auto gm = linear_sigmoid();
  InsertObserversOptions options = global_qconfig(quant::get_default_qconfig("onednn"));
  options.backend_config =
      std::make_shared<backend::BackendConfig>(backend::backend_config_from_json(nlohmann::json::parse(
          R"({"name": "strict", "configs": [{"pattern": "torch.nn.Linear", "observation_type":
          "OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT", "dtype_configs": [{"input_dtype": )" +
          input_constraints + R"(, "output_dtype": "torch.quint8", "weight_dtype": "torch.qint8",
          "bias_dtype": "torch.float32"}]}]})")));
  WarningCollector warnings;
  insert_observers(*gm, options);
  std::string all;
  for (const std::string& message : warnings.messages) all += message + "\n";
  return all;
}

TEST(InsertObservers, ObserverOutsideTheBackendsConstraintsStaysFloatWithTheReason) {
  EXPECT_NE(constraint_warning(R"({"dtype": "torch.quint8", "quant_min_lower_bound": 0, "quant_max_upper_bound": 127})")
                .find("%linear (torch.nn.Linear) stays float: activation quantization range (0, 255) must fall "
                      "within the backend's (0, 127)"),
            std::string::npos);
  EXPECT_NE(constraint_warning(R"({"dtype": "torch.quint8", "scale_min_lower_bound": 0.5})")
                .find("stays float: activation eps (1.1920928955078125e-07) must be >= the backend's min scale (0.5)"),
            std::string::npos);
  EXPECT_EQ(constraint_warning(R"({"dtype": "torch.quint8", "scale_exact_match": 0.00390625,
                                   "zero_point_exact_match": 0})"),
            "prepare: %linear (torch.nn.Linear) stays float: activation observer HistogramObserver must have the "
            "backend's fixed qparams\n");  // and no HistogramObserver warning about missing data
  EXPECT_EQ(
      constraint_warning(R"({"dtype": "torch.quint8", "quant_min_lower_bound": 0, "quant_max_upper_bound": 255})"), "");
}

TEST(InsertObservers, ConvTransposeWithPerChannelWeightsStaysFloat) {
  auto gm = std::make_unique<ir::GraphModule>(ir::make_container_module(), ir::parse_graph(R"(graph():
    %x : [num_users=1] = placeholder[target=x]
    %tconv : [num_users=1] = call_module[target=tconv](args = (%x,), kwargs = {})
    return tconv)"));
  gm->add_submodule("tconv", torch::nn::ConvTranspose2d(torch::nn::ConvTranspose2dOptions(2, 2, 2)).ptr());
  WarningCollector warnings;
  EXPECT_FALSE(insert_observers(*gm, global_qconfig(quant::get_default_qconfig("onednn"))));
  ASSERT_EQ(warnings.messages.size(), 1u);
  EXPECT_NE(warnings.messages[0].find("per-channel weight observers are not supported for ConvTranspose2d"),
            std::string::npos)
      << warnings.messages[0];
  // per-tensor weights (qnnpack's default qconfig) are fine
  EXPECT_TRUE(insert_observers(*gm, global_qconfig(quant::get_default_qconfig("qnnpack"))));
}

TEST(InsertObservers, NoQConfigNoObservers) {
  auto gm = linear_sigmoid();
  InsertObserversOptions options;
  options.qconfig_mapping = std::make_shared<quant::QConfigMapping>();
  EXPECT_FALSE(insert_observers(*gm, options));
  EXPECT_EQ(gm->graph().size(), 4u);
  EXPECT_NE(test::error_of([&] { insert_observers(*gm, InsertObserversOptions{}); }).find("needs a QConfigMapping"),
            std::string::npos);
}

TEST(InsertObservers, MismatchedFusedQConfigsAreAnError) {
  auto gm = std::make_unique<ir::GraphModule>(ir::make_container_module(), ir::parse_graph(R"(graph():
    %x : [num_users=1] = placeholder[target=x]
    %linear : [num_users=1] = call_module[target=linear](args = (%x,), kwargs = {})
    %relu : [num_users=1] = call_module[target=relu](args = (%linear,), kwargs = {})
    return relu)"));
  gm->add_submodule("linear", torch::nn::Linear(4, 4).ptr());
  gm->add_submodule("relu", torch::nn::ReLU().ptr());
  InsertObserversOptions options;
  options.qconfig_mapping = std::make_shared<quant::QConfigMapping>(
      quant::QConfigMapping().set_object_type("torch.nn.Linear", quant::get_default_qconfig("onednn")));
  fuse(*gm);
  EXPECT_NE(test::error_of([&] { insert_observers(*gm, options); })
                .find("During fusion, we need to specify the same qconfigs for all module types in "
                      "torch.ao.nn.intrinsic.LinearReLU offending type: torch.nn.ReLU"),
            std::string::npos);
}

}  // namespace
}  // namespace qfx::passes
