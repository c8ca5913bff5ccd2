// nn::MultiheadAttention is PyTorch 1.13's Python nn.MultiheadAttention bit
// for bit (the oracle: tests/oracle/model_fixtures.py write_attention): the
// self-attention, shared key-value and cross-attention projections, kdim and
// vdim, masks, bias_k/bias_v and add_zero_attn, unbatched queries, the fast
// path (eval, batch first, no grad), per-head weights, and dropout in train
// mode. A scripted module imports as this leaf, and the TorchScript file qfx
// writes for it computes the same.

#include "support/fixtures.h"

#include "qfx/io/tensor_io.h"
#include "qfx/io/torchscript_export.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/interpreter.h"
#include "qfx/ir/module_registry.h"
#include "qfx/nn/attention.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace qfx {
namespace {

const char* const kAttentionCases[] = {"seq_first_self",  "batch_first_self", "batch_first_key_padding",
                                       "cross_kdim_vdim", "shared_key_value", "bias_kv_zero_attn",
                                       "unbatched"};
/// Those 1.13 can script: not with kdim/vdim or bias=False (its forward reads in_proj_weight.dtype, None there).
const char* const kScriptedAttentionCases[] = {"seq_first_self", "batch_first_self", "batch_first_key_padding",
                                               "bias_kv_zero_attn", "unbatched"};

/// The module Python built, from its constructor arguments and state dict.
nn::MultiheadAttention python_module(const std::string& name) {
  c10::Dict<c10::IValue, c10::IValue> saved = io::load_value(test::fixture(name + ".module.pt")).toGenericDict();
  auto value = [&](const std::string& key, c10::IValue fallback) {
    return saved.contains(key) ? saved.at(key) : fallback;
  };
  nn::MultiheadAttentionOptions options(saved.at("embed_dim").toInt(), saved.at("num_heads").toInt());
  options.dropout(0.25)
      .bias(value("bias", true).toBool())
      .add_bias_kv(value("add_bias_kv", false).toBool())
      .add_zero_attn(value("add_zero_attn", false).toBool())
      .kdim(value("kdim", options.embed_dim()).toInt())
      .vdim(value("vdim", options.embed_dim()).toInt())
      .batch_first(value("batch_first", false).toBool());
  nn::MultiheadAttention m(options);
  torch::NoGradGuard no_grad;
  for (auto& item : m->named_parameters()) {
    EXPECT_TRUE(saved.contains(item.key())) << name << ": " << item.key();
    if (saved.contains(item.key())) item.value().copy_(saved.at(item.key()).toTensor());
  }
  size_t tensors = 0;
  for (const auto& item : saved) tensors += item.value().isTensor() ? 1 : 0;
  EXPECT_EQ(m->named_parameters().size(), tensors) << name << ": every tensor of the state dict";
  m->eval();
  return m;
}

/// (q, k, v, key_padding_mask, attn_mask, need_weights, average_attn_weights) as saved.
std::vector<c10::IValue> saved_inputs(const std::string& name) {
  return io::load_value(test::fixture(name + ".inputs.pt")).toListRef().vec();
}

/// Python's (output, weights) for `suffix` (grad, no_grad, train).
c10::IValue expected(const std::string& name, const std::string& suffix) {
  return c10::ivalue::Tuple::create(io::load_value(test::fixture(name + "." + suffix + ".pt")).toListRef().vec());
}

void expect_same(const c10::IValue& ours, const c10::IValue& python, const std::string& where) {
  ASSERT_TRUE(ours.isTuple()) << where;
  const auto& a = ours.toTupleRef().elements();
  const auto& b = python.toTupleRef().elements();
  ASSERT_EQ(a.size(), 2u) << where;
  EXPECT_TRUE(at::equal(a[0].toTensor(), b[0].toTensor()))
      << where << ": output, max error " << test::max_abs_error(a[0], b[0]);
  ASSERT_EQ(a[1].isNone(), b[1].isNone()) << where << ": weights";
  if (!b[1].isNone()) EXPECT_TRUE(at::equal(a[1].toTensor(), b[1].toTensor())) << where << ": weights";
}

class OracleAttention : public ::testing::TestWithParam<const char*> {};

TEST_P(OracleAttention, ModuleIsPythons) {
  const std::string name = std::string("attention_") + GetParam();
  nn::MultiheadAttention m = python_module(name);
  std::vector<c10::IValue> in = saved_inputs(name);
  EXPECT_EQ(ir::module_type_name(*m), "torch.nn.MultiheadAttention");
  nn::AttentionInputs args = nn::MultiheadAttentionImpl::inputs_of({in[0], in[1], in[2], in[3], in[5], in[4], in[6]});
  expect_same(m->forward(args), expected(name, "grad"), name + " with grad");
  {
    torch::NoGradGuard no_grad;
    expect_same(m->forward(args), expected(name, "no_grad"), name + " under no_grad");
  }
  m->train();
  torch::manual_seed(7);
  expect_same(m->forward(args), expected(name, "train"), name + " in train mode");
}

class OracleScriptedAttention : public ::testing::TestWithParam<const char*> {};

TEST_P(OracleScriptedAttention, ImportsAsTheLeafAndExportsAsPythons) {
  const std::string name = std::string("attention_") + GetParam();
  auto gm = io::import_torchscript(test::fixture(name + ".pt"));
  EXPECT_EQ(ir::module_type_name(*gm->get_submodule("attn")), "torch.nn.MultiheadAttention");
  std::vector<c10::IValue> in = saved_inputs(name);
  std::vector<c10::IValue> call(in.begin(), in.begin() + 5);
  std::string path = ::testing::TempDir() + name + "_qfx.pt";
  io::export_torchscript(*gm, path);
  torch::jit::Module exported = torch::jit::load(path);
  auto again = io::import_torchscript(path);  // the written file is a scripted MultiheadAttention again
  EXPECT_EQ(ir::module_type_name(*again->get_submodule("attn")), "torch.nn.MultiheadAttention");
  for (bool grad : {true, false}) {
    torch::AutoGradMode mode(grad);
    const std::string suffix = grad ? "grad" : "no_grad";
    expect_same(ir::Interpreter(*gm).run(call), expected(name, suffix), name + " imported, " + suffix);
    expect_same(exported.forward(call), expected(name, suffix), name + " exported, " + suffix);
    expect_same(ir::Interpreter(*again).run(call), expected(name, suffix), name + " re-imported, " + suffix);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, OracleAttention, ::testing::ValuesIn(kAttentionCases));
INSTANTIATE_TEST_SUITE_P(Cases, OracleScriptedAttention, ::testing::ValuesIn(kScriptedAttentionCases));

}  // namespace
}  // namespace qfx
