// GraphModule: the module tree by dotted paths, attributes, lint, printing.

#include "qfx/ir/graph_module.h"
#include "qfx/ir/parser.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/linear.h>

namespace qfx::ir {
namespace {

TEST(GraphModule, SubmodulesByDottedPath) {
  GraphModule gm;
  auto linear = torch::nn::Linear(5, 10).ptr();
  gm.add_submodule("block.0.linear", linear);
  EXPECT_EQ(gm.get_submodule("block.0.linear"), linear);
  EXPECT_NE(gm.find_submodule("block.0"), nullptr);  // parents created on the way
  EXPECT_EQ(gm.find_submodule("block.1"), nullptr);
  try {
    gm.get_submodule("block.1.linear");
    FAIL();
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no submodule 'block.1.linear'"), std::string::npos);
  }
  auto relu = torch::nn::ReLU().ptr();
  gm.add_submodule("block.0.linear", relu);  // replaces
  EXPECT_EQ(gm.get_submodule("block.0.linear"), relu);
  EXPECT_TRUE(gm.delete_submodule("block.0.linear"));
  EXPECT_FALSE(gm.delete_submodule("block.0.linear"));
  EXPECT_EQ(gm.find_submodule("block.0.linear"), nullptr);
}

TEST(GraphModule, Attributes) {
  GraphModule gm;
  gm.add_submodule("fc", torch::nn::Linear(2, 3).ptr());
  EXPECT_TRUE(gm.has_attr("fc.weight"));
  EXPECT_EQ(gm.get_attr("fc.bias").toTensor().sizes(), at::IntArrayRef({3}));
  gm.set_attr("linear_input_scale_0", at::tensor(0.5));
  gm.set_attr("linear_input_scale_0", at::tensor(0.25));  // replaced in place
  EXPECT_EQ(gm.get_attr("linear_input_scale_0").toTensor().item<double>(), 0.25);
  gm.set_attr("sub.packed", c10::IValue(std::string("not a tensor")));
  EXPECT_EQ(gm.get_attr("sub.packed").toStringRef(), "not a tensor");
  EXPECT_FALSE(gm.has_attr("fc.nothing"));
  EXPECT_THROW(gm.get_attr("fc.nothing"), c10::Error);
  // Tensor attributes are buffers of the owning module: they travel with it.
  EXPECT_EQ(gm.root().named_buffers().size(), 1u);
}

TEST(GraphModule, LintChecksTargets) {
  GraphModule gm(make_container_module(), parse_graph(R"(graph():
    %x : [num_users=1] = placeholder[target=x]
    %fc : [num_users=1] = call_module[target=fc](args = (%x,), kwargs = {})
    return fc)"));
  try {
    gm.lint();
    FAIL();
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("call_module target 'fc' is not a submodule"), std::string::npos);
  }
  gm.add_submodule("fc", torch::nn::Linear(2, 3).ptr());
  gm.lint();
}

TEST(GraphModule, PrintsLikePyTorch) {
  GraphModule gm(make_container_module(), parse_graph(R"(graph():
    %x : [num_users=1] = placeholder[target=x]
    %linear : [num_users=1] = call_module[target=linear](args = (%x,), kwargs = {})
    return linear)"));
  gm.add_submodule("linear", torch::nn::Linear(5, 10).ptr());
  EXPECT_EQ(gm.to_string(),
            "GraphModule(\n"
            "  (linear): Linear(in_features=5, out_features=10, bias=True)\n"
            ")\n\n\n\n"
            "def forward(self, x):\n"
            "    linear = self.linear(x);  x = None\n"
            "    return linear\n"
            "    ");
}

}  // namespace
}  // namespace qfx::ir
