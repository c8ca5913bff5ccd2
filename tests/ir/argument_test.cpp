// Argument: kinds, accessors, equality, and the node walkers.

#include "qfx/ir/graph.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

namespace qfx::ir {
namespace {

TEST(Argument, KindsAndAccessors) {
  EXPECT_TRUE(Argument().is_none());
  EXPECT_EQ(Argument(true).to_bool(), true);
  EXPECT_EQ(Argument(7).to_int(), 7);
  EXPECT_EQ(Argument(int64_t{1} << 40).to_int(), int64_t{1} << 40);
  EXPECT_EQ(Argument(2.5).to_double(), 2.5);
  EXPECT_EQ(Argument(3).to_double(), 3.0);  // ints widen to float
  EXPECT_EQ(Argument("cpu").to_string(), "cpu");
  EXPECT_EQ(Argument(c10::ScalarType::QUInt8).to_dtype(), c10::ScalarType::QUInt8);
  EXPECT_EQ(Argument(c10::MemoryFormat::ChannelsLast).to_memory_format(), c10::MemoryFormat::ChannelsLast);
  Argument s = Argument::slice(1, Argument(), 2);
  EXPECT_EQ(s.kind(), Argument::Kind::kSlice);
  EXPECT_EQ(s.items().size(), 3u);
  EXPECT_TRUE(s.items()[1].is_none());
}

TEST(Argument, KindMismatchNamesBothKinds) {
  try {
    Argument("x").to_int();
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected int, got str"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Argument(1).items(), c10::Error);
}

TEST(Argument, EqualityIsStructural) {
  EXPECT_EQ(Argument::list({1, 2}), Argument::list({1, 2}));
  EXPECT_NE(Argument::list({1, 2}), Argument::tuple({1, 2}));
  EXPECT_NE(Argument(1), Argument(1.0));
  EXPECT_NE(Argument(true), Argument(1));
  EXPECT_EQ(Argument::tuple({Argument::list({"a"}), Argument()}), Argument::tuple({Argument::list({"a"}), Argument()}));
}

TEST(Argument, NodeWalkersVisitNestedNodesInOrder) {
  Graph g;
  Node* a = g.placeholder("a");
  Node* b = g.placeholder("b");
  Argument arg = Argument::tuple({a, Argument::list({b, 3, a}), Argument::slice(Argument(), b, 1)});
  std::vector<std::string> seen;
  for_each_node(arg, [&](Node* n) { seen.push_back(n->name()); });
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "b", "a", "b"}));
  Argument swapped = map_nodes(arg, [&](Node* n) -> Argument { return n == a ? b : a; });
  EXPECT_EQ(swapped, Argument::tuple({b, Argument::list({a, 3, b}), Argument::slice(Argument(), a, 1)}));
}

}  // namespace
}  // namespace qfx::ir
