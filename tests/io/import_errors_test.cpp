// What the importer refuses, and how it says so: the op or module, the module
// path and the source location; a missing or foreign file by name.

#include "support/fixtures.h"

#include "qfx/io/torchscript_import.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

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

TEST(OracleImportErrors, UnsupportedModuleKind) {
  std::string message = import_error(test::fixture("bad_leaf.pt"));
  expect_contains(message, "unsupported module type torch.nn.modules.activation.Softsign");
  expect_contains(message, "in module 'body.1'");
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
