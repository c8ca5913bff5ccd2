// Batch-norm folding and the fuser methods against PyTorch's
// (backend_fixtures.py): the fused module's repr, the folded weight and bias
// bit for bit, the fused module's output, and the errors PyTorch raises.

#include "qfx/backend/backend_registry.h"
#include "qfx/io/tensor_io.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/graph_module.h"
#include "qfx/ir/module_registry.h"
#include "support/fixtures.h"

#include <gtest/gtest.h>
#include <torch/nn/module.h>

namespace qfx::nn {
namespace {

using nlohmann::json;

class OracleFusion : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = io::import_torchscript(test::fixture("fusion_model.pt"));
    c10::IValue tensors = io::load_value(test::fixture("fusion_tensors.pt"));
    tensors_ = tensors.toListRef().vec();
  }

  /// The case's modules in pattern order, as the fuse pass hands them over.
  std::vector<backend::FuserPart> parts(const json& c) {
    std::vector<backend::FuserPart> out;
    for (const auto& name : c["modules"]) {
      auto m = model_->get_submodule(name.get<std::string>());
      m->train(c["is_qat"].get<bool>());
      out.push_back({m, ir::module_type_name(*m)});
    }
    return out;
  }

  at::Tensor tensor(const json& c, int offset) { return tensors_.at(c["tensors"].get<size_t>() + offset).toTensor(); }

  std::unique_ptr<ir::GraphModule> model_;
  std::vector<c10::IValue> tensors_;
};

TEST_F(OracleFusion, FuserMethodsMatchPyTorch) {
  json cases = test::fixture_json("fusion.json");
  ASSERT_EQ(cases.size(), 12u);
  for (const json& c : cases) {
    SCOPED_TRACE(c.dump());
    const backend::FuserMethod* fuser = backend::BackendRegistry::instance().fuser_method(c["fuser"]);
    ASSERT_NE(fuser, nullptr);
    std::vector<backend::FuserPart> p = parts(c);
    bool is_qat = c["is_qat"];
    if (c.contains("error")) {
      EXPECT_NE(test::error_of([&] { (*fuser)(is_qat, p); }).find(c["error"].get<std::string>()), std::string::npos);
      continue;
    }
    std::shared_ptr<torch::nn::Module> fused = (*fuser)(is_qat, p);
    EXPECT_EQ(ir::module_repr(*fused), c["repr"].get<std::string>());
    for (const auto& part : p) part.module->eval();  // the inputs stay as they were: folding copies
    if (is_qat) continue;
    auto named = fused->named_parameters();
    std::string prefix = named.contains("weight") ? "" : "0.";
    EXPECT_TRUE(named[prefix + "weight"].equal(tensor(c, 0))) << "folded weight";
    EXPECT_TRUE(named[prefix + "bias"].equal(tensor(c, 1))) << "folded bias";
    std::vector<c10::IValue> input{tensors_.at(c["input"].get<size_t>())};
    c10::IValue output = ir::ModuleRegistry::instance().find(*fused)->forward(*fused, input);
    EXPECT_LE(test::max_relative_error(output, tensor(c, 2)), 1e-6) << "fused module output";
  }
}

TEST_F(OracleFusion, FoldingLeavesTheRandomStreamAlone) {
  json c = test::fixture_json("fusion.json")[0];
  // randn of one element leaves the second Box-Muller sample cached in the
  // generator: that is part of the stream too
  torch::manual_seed(3);
  torch::randn({1});
  at::Tensor expected = at::cat({torch::rand({4}), torch::randn({3})});
  torch::manual_seed(3);
  torch::randn({1});
  (*backend::BackendRegistry::instance().fuser_method("fuse_conv_bn"))(false, parts(c));
  EXPECT_TRUE(at::cat({torch::rand({4}), torch::randn({3})}).equal(expected));
}

}  // namespace
}  // namespace qfx::nn
