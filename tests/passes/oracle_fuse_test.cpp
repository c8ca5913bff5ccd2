// The fuse pass against PyTorch 1.13's fuse (fuse_fx; is_qat as
// prepare_qat_fx fuses): the same nodes, the same module tree and code, and
// in eval mode the same outputs as PyTorch's fused model.

#include "support/fixtures.h"
#include "support/graph_rows.h"

#include "qfx/backend/backend_json.h"
#include "qfx/backend/builtin_backends.h"
#include "qfx/io/tensor_io.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/interpreter.h"
#include "qfx/passes/pass.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace qfx::passes {
namespace {

struct FuseCase {
  std::string name;  // the case in fuse.json
  bool module_tree;  // compare the printed module tree
  bool code;         // compare the generated code
};

std::ostream& operator<<(std::ostream& os, const FuseCase& c) { return os << c.name; }

class OracleFuse : public ::testing::TestWithParam<FuseCase> {};

FuseOptions options_for(const nlohmann::json& record) {
  FuseOptions options;
  options.is_qat = record["is_qat"];
  options.backend_config = std::make_shared<backend::BackendConfig>(
      record["backend"] == "native"
          ? backend::get_native_backend_config()
          : backend::load_backend_config(test::source_file("examples/backends/my_backend.json")));
  return options;
}

TEST_P(OracleFuse, MatchesPyTorch) {
  const FuseCase& c = GetParam();
  nlohmann::json record = test::fixture_case("fuse.json", c.name);
  auto gm = io::import_torchscript(test::fixture(record["model"]));
  if (record["is_qat"]) gm->root().train(true);
  EXPECT_EQ(fuse(*gm, options_for(record)), record["case"] != "tutorial_bn");
  gm->lint();
  EXPECT_EQ(test::node_rows(gm->graph()), test::node_rows(record));
  if (c.module_tree) {
    std::string tree = gm->to_string();
    EXPECT_EQ(tree.substr(0, tree.size() - gm->code().size() - 1), record["module_tree"].get<std::string>());
  }
  if (c.code) EXPECT_EQ(gm->code(), record["code"].get<std::string>());
  if (record["is_qat"]) return;

  torch::NoGradGuard no_grad;
  c10::IValue input = io::load_value(test::fixture(record["input"]));
  c10::IValue expected = io::load_value(test::fixture(record["output"]));
  c10::IValue ours = ir::Interpreter(*gm).run(io::as_inputs(input, "input"));
  EXPECT_LE(test::max_relative_error(ours, expected), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Cases, OracleFuse,
                         ::testing::Values(FuseCase{"fusion_zoo", true, true}, FuseCase{"fusion_zoo_qat", true, true},
                                           FuseCase{"resnet18", true, false}, FuseCase{"resnet18_qat", true, false},
                                           FuseCase{"mobilenet_v2", true, false},
                                           // Python prints AdaptiveAvgPool2d(1) as given; a trace keeps (1, 1).
                                           FuseCase{"mobilenet_v3_large", false, false},
                                           FuseCase{"linear_relu", true, true}, FuseCase{"tutorial_no_bn", true, true},
                                           FuseCase{"tutorial_bn", true, true},
                                           FuseCase{"tutorial_bn_native", true, true}),
                         [](const ::testing::TestParamInfo<FuseCase>& info) { return info.param.name; });

}  // namespace
}  // namespace qfx::passes
