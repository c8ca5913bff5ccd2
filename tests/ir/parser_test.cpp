// IR text form: the exact line format, and parse_graph reading back what
// Graph::to_string writes (and torch.fx's own `#users` form).

#include "support/fixtures.h"

#include "qfx/ir/graph.h"
#include "qfx/ir/parser.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

namespace qfx::ir {
namespace {

std::unique_ptr<Graph> every_kind_graph() {
  auto g = std::make_unique<Graph>();
  Node* x = g->placeholder("x");
  Node* input = g->placeholder("input");
  Node* w = g->get_attr("layer.0.weight");
  Node* add = g->call_function("operator.add", {x, w});
  Node* q = g->call_function("torch.quantize_per_tensor", {add, 0.1, 128, c10::ScalarType::QUInt8});
  Node* item = g->call_function(
      "operator.getitem",
      {q, Argument::tuple({Argument::slice({}, {}, {}), Argument::slice(1, 3, Argument()), Argument::ellipsis()})});
  Node* m = g->call_method("contiguous", {item}, {{"memory_format", c10::MemoryFormat::ChannelsLast}});
  Node* s = g->call_module("layer.0", {m, Argument::list({input, Argument()}), "it's", 1e-05, -2.5e+20, true},
                           {{"layout", c10::Layout::Strided}, {"single", Argument::tuple({7})}});
  g->output(Argument::tuple({s, Argument::list({x})}));
  return g;
}

TEST(Parser, NodeLineFormat) {
  Graph g;
  Node* x = g.placeholder("x");
  Node* linear = g.call_module("linear", {x});
  g.output(linear);
  EXPECT_EQ(x->format(), "%x : [num_users=1] = placeholder[target=x]");
  EXPECT_EQ(linear->format(), "%linear : [num_users=1] = call_module[target=linear](args = (%x,), kwargs = {})");
  EXPECT_EQ(g.to_string(),
            "graph():\n"
            "    %x : [num_users=1] = placeholder[target=x]\n"
            "    %linear : [num_users=1] = call_module[target=linear](args = (%x,), kwargs = {})\n"
            "    return linear");
}

TEST(Parser, RoundTripKeepsEveryArgumentKind) {
  auto g = every_kind_graph();
  std::string text = g->to_string();
  auto parsed = parse_graph(text);
  EXPECT_EQ(parsed->to_string(), text);
  parsed->lint();
  Node* module = parsed->find_node("layer_0");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(module->args()[2].to_string(), "it's");
  EXPECT_EQ(module->args()[3].to_double(), 1e-05);
  EXPECT_EQ(*module->kwarg("single"), Argument::tuple({7}));
  EXPECT_EQ(parsed->find_node("input_1")->target(), "input");
}

TEST(Parser, ReadsTorchFxPrintForm) {
  auto g = parse_graph(R"(graph():
    %x : [#users=2] = placeholder[target=x]
    %relu : [#users=1] = call_function[target=torch.nn.functional.relu](args = (%x,), kwargs = {inplace: False})
    %add : torch.Tensor [#users=1] = call_function[target=operator.add](args = (%relu, %x), kwargs = {})
    return (add, relu))");
  EXPECT_EQ(g->size(), 4u);
  EXPECT_EQ(*g->find_node("relu")->kwarg("inplace"), Argument(false));
  EXPECT_EQ(g->output_node()->args()[0].items().size(), 2u);
  EXPECT_EQ(g->find_node("x")->users().size(), 2u);
}

TEST(Parser, ErrorsNameLineAndColumn) {
  auto message_of = [](const std::string& text) { return test::error_of([&] { parse_graph(text); }); };
  std::string unknown =
      message_of("graph():\n    %y : [num_users=0] = call_function[target=torch.relu](args = (%x,), kwargs = {})");
  EXPECT_NE(unknown.find("line 2"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("unknown node %x"), std::string::npos) << unknown;
  std::string opcode = message_of("graph():\n    %y : [num_users=0] = call_thing[target=f](args = (), kwargs = {})");
  EXPECT_NE(opcode.find("unknown opcode 'call_thing'"), std::string::npos) << opcode;
  std::string string =
      message_of("graph():\n    %y : [num_users=0] = call_method[target=to](args = ('cpu,), kwargs = {})");
  EXPECT_NE(string.find("unterminated string"), std::string::npos) << string;
  EXPECT_NE(message_of("nothing here").find("expected 'graph('"), std::string::npos);
  std::string twice = message_of(
      "graph():\n    %x : [num_users=0] = placeholder[target=x]\n    %x : [num_users=0] = placeholder[target=x]");
  EXPECT_NE(twice.find("defined twice"), std::string::npos) << twice;
  // found by the ir_text fuzz target: a second output was accepted, and lint refused the graph
  std::string after = message_of("graph():\n    return 0\n    return 0");
  EXPECT_NE(after.find("line 3"), std::string::npos) << after;
  EXPECT_NE(after.find("text after the output"), std::string::npos) << after;
}

}  // namespace
}  // namespace qfx::ir
