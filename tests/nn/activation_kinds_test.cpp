// The activation kinds' forward into a new tensor (ModuleKind::fresh_forward)
// gives the bits of the module's in-place forward and leaves its input as it
// is.

#include "qfx/ir/module_registry.h"
#include "qfx/nn/activation.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/activation.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace qfx::nn {
namespace {

// Normal values with NaN, infinities, both zeros and the clamps' edges.
at::Tensor input() {
  at::manual_seed(3);
  at::Tensor x = at::randn({2, 3, 17, 5}) * 4;
  float* data = x.data_ptr<float>();
  const float special[] = {
      std::numeric_limits<float>::quiet_NaN(), INFINITY, -INFINITY, 0.0f, -0.0f, 6.0f, -3.0f, 3.0f, 1e-30f, -1e30f};
  for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); ++i) data[i * 7] = special[i];
  return x;
}

bool same_bits(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() && a.dtype() == b.dtype() &&
         at::equal(a.contiguous().view(at::kInt), b.contiguous().view(at::kInt));
}

struct Case {
  std::string name;
  std::shared_ptr<torch::nn::Module> module;  // with inplace=True
};

std::vector<Case> cases() {
  return {
      {"torch.nn.ReLU", torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)).ptr()},
      {"torch.nn.ReLU6", torch::nn::ReLU6(torch::nn::ReLU6Options().inplace(true)).ptr()},
      {"torch.nn.Hardtanh",
       torch::nn::Hardtanh(torch::nn::HardtanhOptions().min_val(-1.5).max_val(2.25).inplace(true)).ptr()},
      {"torch.nn.Hardswish", Hardswish(ActivationOptions().inplace(true)).ptr()},
      {"torch.nn.Hardsigmoid", Hardsigmoid(ActivationOptions().inplace(true)).ptr()},
      {"torch.nn.SiLU", SiLU(ActivationOptions().inplace(true)).ptr()},
      {"torch.nn.LeakyReLU",
       torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.3).inplace(true)).ptr()},
      {"torch.nn.ELU", torch::nn::ELU(torch::nn::ELUOptions().alpha(0.7).inplace(true)).ptr()},
  };
}

TEST(ActivationKinds, FreshForwardGivesTheInPlaceBitsAndKeepsTheInput) {
  for (const Case& c : cases()) {
    const ir::ModuleKind* kind = ir::ModuleRegistry::instance().find(*c.module);
    ASSERT_NE(kind, nullptr) << c.name;
    EXPECT_EQ(kind->qualified_name, c.name);
    ASSERT_TRUE(kind->fresh_forward) << c.name;

    at::Tensor in_place = input();
    std::vector<c10::IValue> args = {in_place};
    at::Tensor expected = kind->forward(*c.module, args).toTensor();
    EXPECT_TRUE(expected.is_same(in_place)) << c.name << ": the module's own forward is in place";

    const at::Tensor x = input();
    args = {x};
    at::Tensor fresh = kind->fresh_forward(*c.module, args).toTensor();
    EXPECT_FALSE(fresh.is_same(x)) << c.name;
    EXPECT_FALSE(fresh.data_ptr() == x.data_ptr()) << c.name;
    EXPECT_TRUE(same_bits(fresh, expected)) << c.name;
    EXPECT_TRUE(same_bits(x, input())) << c.name << ": input changed";
  }
}

TEST(ActivationKinds, FreshForwardChecksItsInputs) {
  auto relu = torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)).ptr();
  const ir::ModuleKind* kind = ir::ModuleRegistry::instance().find(*relu);
  ASSERT_NE(kind, nullptr);
  std::vector<c10::IValue> two = {at::ones({2}), at::ones({2})};
  EXPECT_THROW(kind->fresh_forward(*relu, two), c10::Error);
}

TEST(ActivationKinds, KindsThatNeverChangeTheirInputHaveNone) {
  auto sigmoid = torch::nn::Sigmoid().ptr();
  const ir::ModuleKind* kind = ir::ModuleRegistry::instance().find(*sigmoid);
  ASSERT_NE(kind, nullptr);
  EXPECT_FALSE(kind->fresh_forward);
}

}  // namespace
}  // namespace qfx::nn
