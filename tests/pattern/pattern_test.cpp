// Pattern: both of PyTorch's formats give one forward-order representation;
// names resolve through the op catalog, with PyTorch 1.13's spellings.

#include "qfx/pattern/pattern.h"
#include "support/fixtures.h"

#include <gtest/gtest.h>

namespace qfx::pattern {
namespace {

using test::error_of;

TEST(Pattern, SequenceAndNestedFormatsAreOneRepresentation) {
  Pattern forward = Pattern::sequence({"torch.nn.Conv2d", "torch.nn.BatchNorm2d", "torch.nn.ReLU"});
  Pattern nested = Pattern::from_nested({"torch.nn.ReLU", {{"torch.nn.BatchNorm2d", {"torch.nn.Conv2d"}}}});
  EXPECT_TRUE(forward == nested);
  EXPECT_EQ(forward.hash(), nested.hash());
  EXPECT_TRUE(forward.is_sequence());
  EXPECT_EQ(forward.sequence_names(),
            (std::vector<std::string>{"torch.nn.Conv2d", "torch.nn.BatchNorm2d", "torch.nn.ReLU"}));
  EXPECT_EQ(forward.str(), "torch.nn.Conv2d -> torch.nn.BatchNorm2d -> torch.nn.ReLU");
  EXPECT_TRUE(forward.to_nested() == NestedPattern("torch.nn.ReLU", {{"torch.nn.BatchNorm2d", {"torch.nn.Conv2d"}}}));
  EXPECT_FALSE(forward == Pattern::sequence({"torch.nn.Conv2d", "torch.nn.ReLU"}));
}

TEST(Pattern, ComplexPatternListsInputsFirst) {
  // relu(add(MatchAllNode, bn(conv))): the add's arguments in order, then the add.
  Pattern p = Pattern::from_nested(
      {"torch.nn.ReLU", {{"operator.add", {"MatchAllNode", {"torch.nn.BatchNorm2d", {"torch.nn.Conv2d"}}}}}});
  ASSERT_EQ(p.elements().size(), 5u);
  EXPECT_TRUE(p.elements()[0].op.is_any());
  EXPECT_EQ(p.elements()[1].op.name, "torch.nn.Conv2d");
  EXPECT_EQ(p.elements()[2].inputs, std::vector<size_t>{1});
  EXPECT_EQ(p.elements()[3].op.name, "operator.add");
  EXPECT_EQ(p.elements()[3].inputs, (std::vector<size_t>{0, 2}));
  EXPECT_EQ(p.root().op.name, "torch.nn.ReLU");
  EXPECT_FALSE(p.is_sequence());
  EXPECT_TRUE(p.sequence_names().empty());
  EXPECT_EQ(p.num_ops(), 4u);
  EXPECT_EQ(p.str(), "torch.nn.ReLU(operator.add(MatchAllNode, torch.nn.BatchNorm2d(torch.nn.Conv2d)))");
  EXPECT_TRUE(Pattern::from_nested(p.to_nested()) == p);
}

TEST(Pattern, DefaultRootIsPyTorchs) {
  // PyTorch follows the last argument from the output: the conv of a chain...
  EXPECT_EQ(Pattern::sequence({"torch.nn.Conv2d", "torch.nn.ReLU"}).default_root_index(), 0u);
  // ...and the MatchAllNode of add(conv, MatchAllNode), which is why onednn sets a getter.
  Pattern left = Pattern::from_nested({"torch.add", {"torch.nn.Conv2d", "MatchAllNode"}});
  EXPECT_TRUE(left.elements()[left.default_root_index()].op.is_any());
  Pattern right = Pattern::from_nested({"torch.add", {"MatchAllNode", "torch.nn.Conv2d"}});
  EXPECT_EQ(right.elements()[right.default_root_index()].op.name, "torch.nn.Conv2d");
}

TEST(Pattern, OpKindsAndCanonicalNames) {
  const OpCatalog& catalog = OpCatalog::instance();
  EXPECT_EQ(catalog.resolve("torch.nn.Conv2d").kind, OpKind::kModule);
  EXPECT_EQ(catalog.resolve("torch.ao.nn.quantized.reference.LSTM").kind, OpKind::kModule);
  EXPECT_EQ(catalog.resolve("operator.add").kind, OpKind::kFunction);
  EXPECT_EQ(catalog.resolve("torch.addmm").kind, OpKind::kFunction);
  EXPECT_EQ(catalog.resolve("reshape").kind, OpKind::kMethod);
  EXPECT_TRUE(catalog.resolve("MatchAllNode").is_any());
  // PyTorch 1.13's module paths and builtin aliases name the same things.
  EXPECT_EQ(catalog.resolve("torch.nn.intrinsic.ConvReLU2d").name, "torch.ao.nn.intrinsic.ConvReLU2d");
  EXPECT_EQ(catalog.resolve("torch.nn.intrinsic.qat.ConvBn2d").name, "torch.ao.nn.intrinsic.qat.ConvBn2d");
  EXPECT_EQ(catalog.resolve("torch.nn.quantized._reference.Linear").name, "torch.ao.nn.quantized.reference.Linear");
  EXPECT_EQ(catalog.resolve("torch.conv2d").name, "torch.nn.functional.conv2d");
  EXPECT_EQ(catalog.resolve("torch._C._nn.linear").name, "torch.nn.functional.linear");
}

TEST(Pattern, UnknownNamesAreErrors) {
  EXPECT_NE(error_of([] { Pattern::op("torch.nn.Conv2D"); }).find("unknown op \"torch.nn.Conv2D\""), std::string::npos);
  EXPECT_NE(error_of([] { Pattern::op("not a name"); }).find("unknown op"), std::string::npos);
  EXPECT_NE(error_of([] { OpCatalog::instance().resolve_module("torch.add"); }).find("unknown module type"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              Pattern::from_nested({"MatchAllNode", {"torch.nn.Conv2d"}});
            }).find("MatchAllNode takes no"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              Pattern::sequence({"torch.nn.Conv2d", "MatchAllNode"});
            }).find("complex format"),
            std::string::npos);
}

TEST(Pattern, UsersAddNames) {
  OpCatalog& catalog = OpCatalog::instance();
  EXPECT_FALSE(catalog.find("my_lib.FancyConv"));
  catalog.add("my_lib.FancyConv", OpKind::kModule);
  EXPECT_EQ(catalog.resolve("my_lib.FancyConv").kind, OpKind::kModule);
  catalog.add("my_lib.FancyConv", OpKind::kModule);  // again: no-op
  EXPECT_NE(error_of([&] { catalog.add("my_lib.FancyConv", OpKind::kFunction); }).find("already known as a module"),
            std::string::npos);
  EXPECT_NE(error_of([&] { catalog.add("fancy", OpKind::kFunction); }).find("not a qualified name"), std::string::npos);
}

}  // namespace
}  // namespace qfx::pattern
