// A scripted nn.TransformerEncoder(Layer) imports as nn::TransformerEncoder
// (Layer), which computes PyTorch 1.13's forward bit for bit (the oracle:
// tests/oracle/model_fixtures.py write_encoders): the final norm, norm_first
// with gelu and an attention mask, a key padding mask, and the fast paths
// (the fused layer op, and the nested-tensor path, whose padded positions come
// back as zeros) where 1.13 takes them. The TorchScript file qfx writes for it
// computes the same, with and without grad, and imports as the same leaf.

#include "support/fixtures.h"

#include "qfx/io/tensor_io.h"
#include "qfx/io/torchscript_export.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/interpreter.h"
#include "qfx/ir/module_registry.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace qfx {
namespace {

struct EncoderCase {
  const char* name;
  const char* type;  ///< the leaf's kind
};

const EncoderCase kEncoderCases[] = {{"seq_first_norm", "torch.nn.TransformerEncoder"},
                                     {"batch_first_padding", "torch.nn.TransformerEncoder"},
                                     {"norm_first_gelu_mask", "torch.nn.TransformerEncoder"},
                                     {"layer_alone", "torch.nn.TransformerEncoderLayer"}};

class OracleTransformer : public ::testing::TestWithParam<EncoderCase> {};

TEST_P(OracleTransformer, ScriptedEncoderImportsAsTheLeafAndExportsAsPythons) {
  const std::string name = std::string("encoder_") + GetParam().name;
  auto gm = io::import_torchscript(test::fixture(name + ".pt"));
  EXPECT_EQ(ir::module_type_name(*gm->get_submodule("encoder")), GetParam().type);
  std::vector<c10::IValue> inputs = io::load_value(test::fixture(name + ".inputs.pt")).toListRef().vec();
  std::string path = ::testing::TempDir() + name + "_qfx.pt";
  io::export_torchscript(*gm, path);
  torch::jit::Module exported = torch::jit::load(path);
  auto again = io::import_torchscript(path);  // the written file is a scripted encoder again
  EXPECT_EQ(ir::module_type_name(*again->get_submodule("encoder")), GetParam().type);
  for (bool grad : {true, false}) {
    torch::AutoGradMode mode(grad);
    const std::string suffix = grad ? "grad" : "no_grad";
    at::Tensor expected = io::load_value(test::fixture(name + "." + suffix + ".pt")).toTensor();
    at::Tensor imported = ir::Interpreter(*gm).run(inputs).toTensor();
    at::Tensor written = exported.forward(inputs).toTensor();
    EXPECT_TRUE(at::equal(imported, expected))
        << name << " imported, " << suffix << ": max error " << test::max_abs_error(imported, expected);
    EXPECT_TRUE(at::equal(written, expected))
        << name << " exported, " << suffix << ": max error " << test::max_abs_error(written, expected);
    EXPECT_TRUE(at::equal(ir::Interpreter(*again).run(inputs).toTensor(), expected)) << name << " re-imported";
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, OracleTransformer, ::testing::ValuesIn(kEncoderCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace qfx
