// Graph and Node: naming, users bookkeeping, insertion points, erasure,
// copying, dead code elimination and lint.

#include "support/fixtures.h"

#include "qfx/ir/graph.h"
#include "qfx/ir/namespace.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

namespace qfx::ir {
namespace {

std::vector<std::string> names(const std::vector<Node*>& nodes) {
  std::vector<std::string> out;
  for (Node* n : nodes) out.push_back(n->name());
  return out;
}

using test::error_of;

TEST(Graph, NamesFollowFx) {
  Graph g;
  Node* x = g.placeholder("input");
  EXPECT_EQ(x->name(), "input_1");  // a Python builtin is never shadowed
  EXPECT_EQ(x->target(), "input");
  Node* conv = g.call_module("layer1.0.conv1", {x});
  EXPECT_EQ(conv->name(), "layer1_0_conv1");
  EXPECT_EQ(g.call_function("torch.nn.functional.relu", {conv})->name(), "relu");
  EXPECT_EQ(g.call_function("torch.relu", {conv})->name(), "relu_1");
  EXPECT_EQ(g.call_method("__getitem__", {conv, 0})->name(), "getitem");
  EXPECT_EQ(g.call_module("convBlock", {x})->name(), "conv_block");
  EXPECT_EQ(g.get_attr("layer1.0.weight")->name(), "layer1_0_weight");
  EXPECT_EQ(g.output(conv)->name(), "output");
}

TEST(Graph, UsersFollowArgumentChanges) {
  Graph g;
  Node* x = g.placeholder("x");
  Node* y = g.placeholder("y");
  Node* add = g.call_function("operator.add", {x, y});
  Node* mul = g.call_function("operator.mul", {x, x});
  EXPECT_EQ(names(x->users()), (std::vector<std::string>{"add", "mul"}));
  add->set_args({y, y});
  EXPECT_EQ(names(x->users()), (std::vector<std::string>{"mul"}));
  EXPECT_EQ(names(y->users()), (std::vector<std::string>{"add"}));  // once, though used twice
  mul->set_kwarg("alpha", y);
  EXPECT_EQ(names(y->users()), (std::vector<std::string>{"add", "mul"}));
  // As in FX, a node whose arguments change moves to the end of the users.
  add->set_arg(0, y);
  EXPECT_EQ(names(y->users()), (std::vector<std::string>{"mul", "add"}));
  EXPECT_EQ(names(add->input_nodes()), (std::vector<std::string>{"y"}));
}

TEST(Graph, ReplaceAllUsesWith) {
  Graph g;
  Node* x = g.placeholder("x");
  Node* a = g.call_function("torch.relu", {x});
  Node* b = g.call_function("torch.sigmoid", {x});
  Node* c = g.call_function("torch.tanh", {Argument::list({x, a})});
  Node* z = g.placeholder("z");
  auto changed = x->replace_all_uses_with(z, [&](Node* user) { return user != b; });
  EXPECT_EQ(names(changed), (std::vector<std::string>{"relu", "tanh"}));
  EXPECT_EQ(names(x->users()), (std::vector<std::string>{"sigmoid"}));
  EXPECT_EQ(c->args()[0], Argument::list({z, a}));
}

TEST(Graph, EraseRefusesNodesInUse) {
  Graph g;
  Node* x = g.placeholder("x");
  Node* r = g.call_function("torch.relu", {x});
  g.output(r);
  std::string message = error_of([&] { g.erase_node(r); });
  EXPECT_NE(message.find("%relu still has 1 user(s), the first being %output"), std::string::npos) << message;
  g.output_node()->set_args({x});
  g.erase_node(r);
  EXPECT_EQ(g.size(), 2u);
  EXPECT_TRUE(x->users().size() == 1 && x->users()[0] == g.output_node());
}

TEST(Graph, InsertingBeforeAndAfterKeepCreationOrder) {
  Graph g;
  Node* x = g.placeholder("x");
  Node* out = g.output(x);
  {
    auto guard = g.inserting_after(x);
    g.call_function("torch.relu", {x});
    g.call_function("torch.sigmoid", {x});
  }
  {
    auto guard = g.inserting_before(out);
    g.call_function("torch.tanh", {x});
  }
  g.call_function("torch.exp", {x});  // the guard is gone: appended at the end again
  EXPECT_EQ(names(g.node_list()), (std::vector<std::string>{"x", "relu", "sigmoid", "tanh", "output", "exp"}));
}

TEST(Graph, MovingNodes) {
  Graph g;
  Node* x = g.placeholder("x");
  Node* a = g.call_function("torch.relu", {x});
  Node* b = g.call_function("torch.sigmoid", {x});
  x->append(b);
  EXPECT_EQ(names(g.node_list()), (std::vector<std::string>{"x", "sigmoid", "relu"}));
  b->append(b);
  a->prepend(a);
  EXPECT_EQ(names(g.node_list()), (std::vector<std::string>{"x", "sigmoid", "relu"}));
  a->append(x);
  EXPECT_EQ(names(g.node_list()), (std::vector<std::string>{"sigmoid", "relu", "x"}));
  EXPECT_EQ(g.first(), b);
  EXPECT_EQ(g.last(), x);
}

TEST(Graph, DeadCodeElimination) {
  Graph g;
  Node* x = g.placeholder("x");
  Node* unused_input = g.placeholder("unused");
  Node* a = g.call_function("torch.relu", {x});
  g.call_function("torch.sigmoid", {a});  // dead, and makes relu dead
  g.call_method("add_", {x, 1});          // in place: kept
  g.output(x);
  EXPECT_TRUE(g.eliminate_dead_code());
  EXPECT_EQ(names(g.node_list()), (std::vector<std::string>{"x", "unused", "add_", "output"}));
  EXPECT_FALSE(g.eliminate_dead_code());
  EXPECT_EQ(unused_input->users().size(), 0u);
}

TEST(Graph, CloneAndNodeCopy) {
  Graph g;
  Node* x = g.placeholder("x");
  Node* r = g.call_function("torch.nn.functional.relu", {x}, {{"inplace", true}});
  r->meta()["note"] = std::string("kept");
  g.output(Argument::tuple({r, x}));
  std::unordered_map<const Node*, Node*> map;
  auto copy = g.clone(&map);
  EXPECT_EQ(copy->to_string(), g.to_string());
  EXPECT_EQ(std::any_cast<std::string>(map.at(r)->meta().at("note")), "kept");
  EXPECT_EQ(&map.at(r)->owning_graph(), copy.get());
  copy->lint();
}

TEST(Graph, LintFindsBrokenGraphs) {
  Graph g;
  Node* x = g.placeholder("x");
  Node* a = g.call_function("torch.relu", {x});
  Node* b = g.call_function("torch.sigmoid", {a});
  g.output(b);
  g.lint();
  a->prepend(b);  // sigmoid now runs before relu
  std::string message = error_of([&] { g.lint(); });
  EXPECT_NE(message.find("lint: node %sigmoid: input %relu is used before it is defined"), std::string::npos)
      << message;
  EXPECT_NE(message.find("graph():"), std::string::npos);  // the graph is shown
  b->prepend(a);
  g.lint();
  g.call_function("torch.exp", {x});  // appended after the output
  message = error_of([&] { g.lint(); });
  EXPECT_NE(message.find("output node is not the last node"), std::string::npos) << message;
}

TEST(Graph, NodesFromAnotherGraphAreRejected) {
  Graph g1;
  Graph g2;
  Node* x = g1.placeholder("x");
  std::string message = error_of([&] { g2.call_function("torch.relu", {x}); });
  EXPECT_NE(message.find("belongs to another graph"), std::string::npos) << message;
  EXPECT_EQ(g2.size(), 0u);
  EXPECT_TRUE(x->users().empty());
}

}  // namespace
}  // namespace qfx::ir

namespace qfx::ir {
namespace {

// Suffixes continue past names reserved out of order; thousands of alike
// names stay fast (the search resumes where the taken run ends).
TEST(Namespace, SuffixesSkipTakenNamesInOrder) {
  Namespace ns;
  EXPECT_EQ(ns.create_name("add"), "add");
  EXPECT_EQ(ns.create_name("add"), "add_1");
  ns.reserve("add_3");
  EXPECT_EQ(ns.create_name("add"), "add_2");
  EXPECT_EQ(ns.create_name("add"), "add_4");
  EXPECT_EQ(ns.create_name("add_1"), "add_5");
  EXPECT_EQ(ns.create_name("add_9"), "add_9");
  EXPECT_EQ(ns.create_name("add"), "add_6");
  for (int i = 0; i < 20000; ++i) ns.create_name("quantize_per_tensor");
  EXPECT_EQ(ns.create_name("quantize_per_tensor"), "quantize_per_tensor_20000");
}

}  // namespace
}  // namespace qfx::ir
