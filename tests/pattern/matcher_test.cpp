// Matching: PyTorch's one-user rule as config patterns carry it, and what
// hand-written rule patterns add (classes, more arguments, any users), with
// the reasons --explain gives.

#include "qfx/pattern/matcher.h"

#include "qfx/ir/module_registry.h"
#include "qfx/ir/parser.h"

#include <gtest/gtest.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/conv.h>

namespace qfx::pattern {
namespace {

/// x -> conv -> relu, the conv also read by an add; and a quantize of the
/// relu with its scale, zero point and dtype.
std::unique_ptr<ir::GraphModule> conv_relu_graph() {
  auto gm = std::make_unique<ir::GraphModule>(ir::make_container_module(), ir::parse_graph(R"(graph():
    %x : [num_users=1] = placeholder[target=x]
    %conv : [num_users=2] = call_module[target=conv](args = (%x,), kwargs = {})
    %relu : [num_users=2] = call_module[target=relu](args = (%conv,), kwargs = {})
    %add : [num_users=1] = call_function[target=operator.add](args = (%relu, %conv), kwargs = {})
    %q : [num_users=1] = call_function[target=torch.quantize_per_tensor](args = (%relu, 0.5, 3, torch.quint8), kwargs = {})
    return (add, q))"));
  gm->add_submodule("conv", torch::nn::Conv2d(3, 3, 1).ptr());
  gm->add_submodule("relu", torch::nn::ReLU().ptr());
  return gm;
}

ir::Node* node_named(ir::GraphModule& gm, const std::string& name) {
  for (ir::Node* n : gm.graph().nodes()) {
    if (n->name() == name) return n;
  }
  return nullptr;
}

TEST(Matcher, ConfigPatternsWriteTheOneUserRuleIntoTheirElements) {
  Pattern p = Pattern::sequence({"torch.nn.Conv2d", "torch.nn.ReLU"});
  EXPECT_EQ(p.elements()[0].max_users, 1u);
  EXPECT_EQ(p.elements()[1].max_users, kAnyUsers);
  auto gm = conv_relu_graph();
  EXPECT_FALSE(match_at(p, *node_named(*gm, "relu"), *gm));
  EXPECT_EQ(why_no_match(p, *node_named(*gm, "relu"), *gm), "%conv has 2 users (a fused value may have one)");
}

TEST(Matcher, RulePatternsMayLetANodeHaveUsersAndMoreArguments) {
  // quantize_per_tensor(relu(conv(x)), ...): the conv has 2 users, the quantize 4 arguments
  Term relu = Term::of_class("relu", [](const ir::Argument& v, const ir::GraphModule& gm) {
    return v.is_node() && v.to_node()->op() == ir::Opcode::kCallModule &&
           ir::module_type_name(*gm.get_submodule(v.to_node()->target())) == "torch.nn.ReLU";
  });
  Term conv = Term{OpCatalog::instance().resolve("torch.nn.Conv2d"), {}, {Term::any()}};
  Pattern exact = Pattern::from_term(Term::function("torch.quantize_per_tensor").of({relu.of({conv})}));
  Pattern more = Pattern::from_term(Term::function("torch.quantize_per_tensor").of({relu.of({conv})}).and_more());
  auto gm = conv_relu_graph();
  ir::Node* q = node_named(*gm, "q");
  EXPECT_EQ(why_no_match(exact, *q, *gm), "%q has 4 arguments, the pattern 1");
  std::optional<PatternMatch> m = match_at(more, *q, *gm);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->node(2), node_named(*gm, "relu"));
  EXPECT_EQ(m->node(1), node_named(*gm, "conv"));
  EXPECT_EQ(m->op_nodes().size(), 3u);

  Pattern one_user =
      Pattern::from_term(Term::function("torch.quantize_per_tensor").of({relu.of({conv.one_user()})}).and_more());
  EXPECT_EQ(why_no_match(one_user, *q, *gm), "%conv has 2 users (a fused value may have one)");
}

TEST(Matcher, AClassElementSaysWhatItIsNot) {
  Term positive = Term::of_class("a positive int", [](const ir::Argument& v, const ir::GraphModule&) {
    return v.kind() == ir::Argument::Kind::kInt && v.to_int() > 0;
  });
  auto gm = conv_relu_graph();
  ir::Node* q = node_named(*gm, "q");
  Pattern zero_point = Pattern::from_term(
      Term::function("torch.quantize_per_tensor").of({Term::any(), Term::any(), positive}).and_more());
  EXPECT_TRUE(match_at(zero_point, *q, *gm));
  Pattern scale =
      Pattern::from_term(Term::function("torch.quantize_per_tensor").of({Term::any(), positive}).and_more());
  EXPECT_EQ(why_no_match(scale, *q, *gm), "0.5 is not a positive int");
  EXPECT_TRUE(element_accepts(zero_point, 2, ir::Argument(int64_t{3}), *gm));
  EXPECT_FALSE(element_accepts(zero_point, 2, ir::Argument(int64_t{-3}), *gm));
}

TEST(Matcher, WhyNotAtTheAnchorFollowsItsValue) {
  Term conv = Term{OpCatalog::instance().resolve("torch.nn.Conv2d"), {}, {Term::any()}};
  Term relu = Term{OpCatalog::instance().resolve("torch.nn.ReLU"), {}, {conv}};
  Pattern p = Pattern::from_term(Term::function("torch.quantize_per_tensor").of({relu}).and_more());
  EXPECT_EQ(p.path_to(1), (std::vector<size_t>{3, 2, 1}));
  auto gm = conv_relu_graph();
  EXPECT_EQ(why_not_at(p, 1, *node_named(*gm, "conv"), *gm), "");  // q(relu(conv)) binds it
  Pattern add_after = Pattern::from_term(Term::function("torch.sigmoid").of({relu}));
  EXPECT_EQ(why_not_at(add_after, 1, *node_named(*gm, "conv"), *gm),
            "its value does not go to torch.nn.ReLU -> torch.sigmoid");
  Pattern relu_of_conv_only = Pattern::from_term(Term::function("operator.add").of({relu, conv}));
  EXPECT_EQ(why_not_at(relu_of_conv_only, 1, *node_named(*gm, "conv"), *gm), "");
}

}  // namespace
}  // namespace qfx::pattern
