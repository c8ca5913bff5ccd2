// What the importer refuses, and how it says so: the op or module, the module
// path and the source location; a missing or foreign file by name. A torch.nn
// module without a qfx form is not refused: it runs as TorchScript, with a warning.

#include "support/fixtures.h"
#include "support/warnings.h"

#include "qfx/io/torchscript_import.h"
#include "qfx/ir/interpreter.h"
#include "qfx/nn/opaque_modules.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <torch/script.h>

#include <fstream>

namespace qfx::io {
namespace {

std::string import_error(const std::string& path) {
  return test::error_of([&] { import_torchscript(path); });
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

TEST(OracleImportErrors, DataDependentControlFlow) {
  std::string message = import_error(test::fixture("bad_control_flow.scripted.pt"));
  expect_contains(message, "data-dependent control flow");
  expect_contains(message, "in the root module");
  expect_contains(message, "model_fixtures.py:");  // the Python line of the `if`
}

TEST(OracleImportErrors, UnmappedOp) {
  std::string message = import_error(test::fixture("bad_op.pt"));
  expect_contains(message, "unsupported op aten::cumsum");
  expect_contains(message, "model_fixtures.py:");
}

TEST(OracleImportErrors, ModuleKindWithoutQfxFormRunsAsTorchScriptWithAWarning) {
  // FX keeps a torch.nn module as a leaf; with no qfx form it runs as itself and stays float
  test::WarningCollector warnings;
  std::unique_ptr<ir::GraphModule> gm = import_torchscript(test::fixture("bad_leaf.pt"));
  ASSERT_EQ(warnings.messages.size(), 1u);
  expect_contains(warnings.messages[0],
                  "import: module 'body.1' (torch.nn.Softsign) has no qfx form: it runs as "
                  "TorchScript and stays float");
  EXPECT_NE(std::dynamic_pointer_cast<nn::ScriptModuleImpl>(gm->get_submodule("body.1")), nullptr);
  at::Tensor x = at::randn({2, 4});
  at::Tensor expected = torch::jit::load(test::fixture("bad_leaf.pt")).forward({x}).toTensor();
  EXPECT_TRUE(at::allclose(ir::Interpreter(*gm).run({x}).toTensor(), expected));
}

TEST(OracleImportErrors, MissingOrForeignFile) {
  expect_contains(import_error("/nonexistent/model.pt"), "cannot open model file '/nonexistent/model.pt'");
  std::string path = ::testing::TempDir() + "/not_a_model.pt";
  std::ofstream(path) << "plain text";
  expect_contains(import_error(path), "is not a TorchScript archive");
  expect_contains(import_error(test::fixture("resnet18.input.pt")), "is not a TorchScript archive");
}

}  // namespace
}  // namespace qfx::io
