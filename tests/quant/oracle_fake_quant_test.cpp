// Fake-quantize modules over the oracle's four steps (observation off, or LSQ
// parameter learning on, from step 2): the same outputs, input gradients and,
// for LearnableFakeQuantize, scale and zero-point gradients as PyTorch.

#include "support/fixtures.h"

#include "qfx/io/tensor_io.h"
#include "qfx/quant/fake_quantize.h"
#include "qfx/quant/qconfig_json.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

namespace qfx::quant {
namespace {

// The module's own `scale` or `zero_point` (a buffer, or a parameter for LSQ).
at::Tensor state(const ActivationPostProcess& module, const std::string& name) {
  if (const at::Tensor* t = module.named_buffers(false).find(name)) return *t;
  return module.named_parameters(false)[name].detach();
}

TEST(OracleFakeQuant, ForwardAndBackwardMatchPyTorch) {
  c10::IValue input_file = io::load_value(test::fixture("fake_quant_inputs.pt"));
  auto inputs = input_file.toListRef();
  auto cases = test::fixture_json("fake_quant.json");
  ASSERT_EQ(cases.size(), 8u);
  test::WarningCapture quiet;
  for (const auto& c : cases) {
    std::string name = c["name"].get<std::string>();
    SCOPED_TRACE(name);
    auto module = spec_from_json(c["spec"], "spec").make();
    auto* fake_quant = dynamic_cast<FakeQuantizeBase*>(module.get());
    auto* learnable = dynamic_cast<LearnableFakeQuantizeImpl*>(module.get());
    ASSERT_NE(fake_quant, nullptr);
    c10::IValue expected_file = io::load_value(test::fixture("fake_quant_" + name + ".pt"));
    auto expected = expected_file.toListRef();
    size_t k = 0;
    for (int step = 0; step < 4; ++step) {
      if (step == 2 && learnable != nullptr) learnable->enable_param_learning();
      if (step == 2 && learnable == nullptr) fake_quant->disable_observer();
      at::Tensor x = inputs[step].toTensor().clone().set_requires_grad(true);
      at::Tensor y = module->forward(x);
      (y * inputs[4 + step].toTensor()).sum().backward();
      EXPECT_TRUE(at::equal(y.detach(), expected[k++].toTensor())) << "output, step " << step;
      EXPECT_TRUE(at::equal(x.grad(), expected[k++].toTensor())) << "input gradient, step " << step;
      if (learnable == nullptr) continue;
      for (at::Tensor* p : {&learnable->scale, &learnable->zero_point}) {
        at::Tensor grad = p->grad().defined() ? p->grad().clone() : at::zeros_like(*p);
        EXPECT_TRUE(at::allclose(grad, expected[k++].toTensor(), 0, 0)) << "parameter gradient, step " << step;
        p->mutable_grad() = at::Tensor();
      }
    }
    EXPECT_TRUE(at::equal(state(*module, "scale"), expected[k++].toTensor())) << "final scale";
    EXPECT_TRUE(at::equal(state(*module, "zero_point"), expected[k++].toTensor())) << "final zero_point";
  }
}

}  // namespace
}  // namespace qfx::quant
