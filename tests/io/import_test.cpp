// TorchScript import against the oracle: for each model, the imported graph
// has the nodes torch.fx.symbolic_trace records for the Python model, the
// module tree prints as PyTorch prints it, and the qfx interpreter computes
// what the TorchScript module and the Python model compute.

#include "support/fixtures.h"

#include "qfx/io/tensor_io.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/interpreter.h"

#include <gtest/gtest.h>
#include <torch/script.h>

namespace qfx::io {
namespace {

struct ImportCase {
  std::string file;   // the TorchScript file in the fixtures
  std::string model;  // the fixture model it was made from
  bool full_nodes;    // compare (name, op, target) of every node, else names only
  bool module_tree;   // compare the printed module tree
  bool code;          // compare the generated code exactly
};

std::ostream& operator<<(std::ostream& os, const ImportCase& c) { return os << c.file; }

class OracleImport : public ::testing::TestWithParam<ImportCase> {};

std::vector<std::string> fx_field(const nlohmann::json& fx, const std::string& key, bool modules_only) {
  std::vector<std::string> out;
  for (const auto& n : fx["nodes"]) {
    if (!modules_only || n["op"] == "call_module") out.push_back(n[key].get<std::string>());
  }
  return out;
}

std::vector<std::string> qfx_field(const ir::Graph& g, const std::string& key, bool modules_only) {
  std::vector<std::string> out;
  for (const ir::Node* n : g.nodes()) {
    if (modules_only && n->op() != ir::Opcode::kCallModule) continue;
    out.push_back(key == "name" ? n->name() : key == "op" ? ir::opcode_name(n->op()) : n->target());
  }
  return out;
}

TEST_P(OracleImport, MatchesFxAndComputesTheSame) {
  const ImportCase& c = GetParam();
  auto gm = import_torchscript(test::fixture(c.file));
  gm->lint();
  auto fx = test::fixture_json(c.model + ".fx.json");
  const ir::Graph& g = gm->graph();
  EXPECT_EQ(qfx_field(g, "target", true), fx_field(fx, "target", true));
  EXPECT_EQ(qfx_field(g, "name", false), fx_field(fx, "name", false));
  if (c.full_nodes) {
    EXPECT_EQ(qfx_field(g, "op", false), fx_field(fx, "op", false));
    EXPECT_EQ(qfx_field(g, "target", false), fx_field(fx, "target", false));
  }
  if (c.module_tree) {
    std::string tree = gm->to_string();
    tree = tree.substr(0, tree.size() - gm->code().size() - 1);
    EXPECT_EQ(tree, fx["module_tree"].get<std::string>());
  }
  if (c.code) EXPECT_EQ(gm->code(), fx["code"].get<std::string>());

  c10::IValue input = load_value(test::fixture(c.model + ".input.pt"));
  c10::IValue python_output = load_value(test::fixture(c.model + ".output.pt"));
  torch::NoGradGuard no_grad;
  ir::Interpreter interpreter(*gm);
  c10::IValue ours = interpreter.run(as_inputs(input, "input"));
  EXPECT_LE(test::max_relative_error(ours, python_output), 1e-5);
  torch::jit::Module script = torch::jit::load(test::fixture(c.file));
  c10::IValue scripted = script.forward(as_inputs(input, "input"));
  EXPECT_LE(test::max_relative_error(ours, scripted), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Models, OracleImport,
    ::testing::Values(ImportCase{"resnet18.pt", "resnet18", true, true, false},
                      ImportCase{"resnet18.scripted.pt", "resnet18", true, true, false},
                      ImportCase{"mobilenet_v2.scripted.pt", "mobilenet_v2", true, true, false},
                      ImportCase{"mobilenet_v3_large.scripted.pt", "mobilenet_v3_large", true, false, false},
                      ImportCase{"resnet50.pt", "resnet50", true, true, false},
                      ImportCase{"mobilenet_v2.pt", "mobilenet_v2", true, true, false},
                      // Python prints AdaptiveAvgPool2d(1) as given; a trace keeps only (1, 1).
                      ImportCase{"mobilenet_v3_large.pt", "mobilenet_v3_large", true, false, false},
                      ImportCase{"linear_relu.pt", "linear_relu", true, true, true},
                      ImportCase{"linear_relu.scripted.pt", "linear_relu", true, true, true},
                      ImportCase{"tutorial_no_bn.pt", "tutorial_no_bn", true, true, true},
                      ImportCase{"tutorial_no_bn.scripted.pt", "tutorial_no_bn", true, true, true},
                      ImportCase{"tutorial_bn.pt", "tutorial_bn", true, true, true},
                      ImportCase{"tutorial_bn.scripted.pt", "tutorial_bn", true, true, true},
                      ImportCase{"module_zoo.pt", "module_zoo", false, true, false},
                      ImportCase{"functional_zoo.pt", "functional_zoo", false, true, false}),
    [](const ::testing::TestParamInfo<ImportCase>& info) {
      std::string name = info.param.file.substr(0, info.param.file.size() - 3);
      for (char& ch : name) {
        if (ch == '.') ch = '_';
      }
      return name;
    });

}  // namespace
}  // namespace qfx::io
