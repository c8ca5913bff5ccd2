// The IR against torch.fx itself: node naming (_Namespace), Python literal
// spelling (repr), and generated code (Graph.python_code), with the expected
// values made by tests/oracle/make_fixtures.py.

#include "support/fixtures.h"

#include "qfx/ir/graph.h"
#include "qfx/ir/python_literals.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace qfx::ir {
namespace {

TEST(OracleIr, NamespaceMatchesFx) {
  for (const auto& c : test::fixture_json("names.json")) {
    Namespace ns;
    std::vector<std::string> names;
    for (const auto& candidate : c["candidates"])
      names.push_back(ns.create_name(snake_case(candidate.get<std::string>())));
    EXPECT_EQ(names, c["names"].get<std::vector<std::string>>());
  }
}

TEST(OracleIr, FloatReprMatchesPython) {
  auto literals = test::fixture_json("literals.json");
  ASSERT_GT(literals["floats"].size(), 500u);
  for (const auto& f : literals["floats"]) {
    double value = std::strtod(f["hex"].get<std::string>().c_str(), nullptr);
    EXPECT_EQ(python_float_repr(value), f["repr"].get<std::string>()) << f["hex"];
  }
}

TEST(OracleIr, StringReprMatchesPythonAndReadsBack) {
  for (const auto& s : test::fixture_json("literals.json")["strings"]) {
    std::string text = s["text"].get<std::string>();
    std::string repr = s["repr"].get<std::string>();
    EXPECT_EQ(python_str_repr(text), repr);
    EXPECT_EQ(parse_python_str(repr).value_or("<none>"), text);
  }
}

// The same graph as write_codegen() in make_fixtures.py.
TEST(OracleIr, CodegenMatchesFx) {
  Graph g;
  Node* x = g.placeholder("x");
  Node* input = g.placeholder("input");
  Node* w = g.get_attr("layer.0.weight");
  Node* add = g.call_function("operator.add", {x, w});
  Node* mul = g.call_function("operator.mul", {add, 2.5});
  Node* flat = g.call_function("torch.flatten", {mul}, {{"start_dim", 1}});
  Node* view = g.call_method("view", {flat, -1, 4});
  Node* item = g.call_function("operator.getitem",
                               {view, Argument::tuple({Argument::slice({}, {}, {}), Argument::slice(1, 3, {})})});
  Node* to = g.call_method("to", {item, c10::ScalarType::Half});
  Node* relu = g.call_function("torch.nn.functional.relu", {to}, {{"inplace", false}});
  Node* mod = g.call_module("layer.0", {relu, Argument::list({input, Argument()}), "cpu"});
  Node* cat = g.call_function("torch.cat", {Argument::list({mod, relu})}, {{"dim", 0}});
  Node* neg = g.call_function("operator.neg", {cat});
  g.call_function("torch.sigmoid", {neg});
  g.output(Argument::tuple({neg, item}));
  EXPECT_EQ(g.python_code(), test::fixture_json("codegen.json")["code"].get<std::string>());
}

}  // namespace
}  // namespace qfx::ir
