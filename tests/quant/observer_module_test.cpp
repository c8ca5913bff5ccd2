// Observers and fake-quantize modules as LibTorch modules: state in buffers
// (clone and torch::save carry it), the fake-quant switches, and the qconfig
// predicates.

#include "qfx/quant/fake_quantize.h"
#include "qfx/quant/histogram_observer.h"
#include "qfx/quant/min_max_observers.h"
#include "qfx/quant/qconfig.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/serialize.h>

#include <sstream>

namespace qfx::quant {
namespace {

void expect_same_qparams(ActivationPostProcess& a, ActivationPostProcess& b) {
  QParams qa = a.calculate_qparams();
  QParams qb = b.calculate_qparams();
  EXPECT_TRUE(at::equal(qa.scale, qb.scale));
  EXPECT_TRUE(at::equal(qa.zero_point, qb.zero_point));
}

TEST(ObserverModule, StateTravelsWithCloneAndSave) {
  at::manual_seed(0);
  const std::vector<ObserverSpec> specs = {
      ObserverSpec("HistogramObserver"),
      ObserverSpec("PerChannelMinMaxObserver", {{"dtype", c10::kQInt8}, {"qscheme", c10::kPerChannelSymmetric}}),
      ObserverSpec("MovingAverageMinMaxObserver"),
      ObserverSpec("qfx.observer.PercentileObserver"),
      ObserverSpec("qfx.observer.MSEObserver", {{"dtype", c10::kQInt8}, {"qscheme", c10::kPerChannelSymmetric}}),
      ObserverSpec("qfx.observer.EntropyObserver")};
  for (const ObserverSpec& spec : specs) {
    SCOPED_TRACE(spec.repr());
    auto observer = spec.make();
    for (int i = 0; i < 3; ++i) observer->forward(at::randn({4, 6, 5}) * (i + 1));
    auto copy = std::dynamic_pointer_cast<ActivationPostProcess>(observer->clone());
    ASSERT_NE(copy, nullptr);
    {
      SCOPED_TRACE("clone");
      expect_same_qparams(*observer, *copy);
    }
    std::stringstream stream;
    torch::save(std::static_pointer_cast<torch::nn::Module>(observer), stream);
    auto loaded = spec.make();
    auto loaded_module = std::static_pointer_cast<torch::nn::Module>(loaded);
    torch::load(loaded_module, stream);
    expect_same_qparams(*observer, *loaded);
  }
}

TEST(FakeQuantize, SwitchesControlObservationAndOutput) {
  auto fq = std::dynamic_pointer_cast<FakeQuantizeImpl>(observer_preset("default_fake_quant")->make());
  at::Tensor x = at::linspace(-1, 3, 50);
  at::Tensor y = fq->forward(x);
  EXPECT_FALSE(at::equal(y, x));  // fake-quantized
  fq->disable_fake_quant();
  EXPECT_TRUE(at::equal(fq->forward(x * 10), x * 10));  // passes through
  at::Tensor scale = fq->scale.clone();
  EXPECT_FALSE(at::equal(scale, at::ones({1})));
  fq->disable_observer();
  fq->forward(x * 100);
  EXPECT_TRUE(at::equal(fq->scale, scale));  // no longer observing
  EXPECT_FALSE(fq->observer_enabled());
}

TEST(QConfig, QuantizationModes) {
  EXPECT_TRUE(activation_is_dynamically_quantized(*qconfig_preset("default_dynamic_qconfig")));
  EXPECT_TRUE(activation_is_dynamically_quantized(*qconfig_preset("float16_dynamic_qconfig")));
  EXPECT_FALSE(activation_is_dynamically_quantized(get_default_qconfig("onednn")));
  EXPECT_TRUE(activation_is_statically_quantized(get_default_qconfig("onednn")));
  EXPECT_TRUE(activation_is_statically_quantized(*qconfig_preset("float16_static_qconfig")));
  EXPECT_FALSE(activation_is_statically_quantized(*qconfig_preset("float_qparams_weight_only_qconfig")));
  EXPECT_TRUE(is_reuse_input_qconfig(*qconfig_preset("default_reuse_input_qconfig")));
  QConfigDtypes d = qconfig_dtypes(*qconfig_preset("default_dynamic_qconfig"));
  EXPECT_EQ(d.activation, c10::kQUInt8);
  EXPECT_EQ(d.weight, c10::kQInt8);
  EXPECT_EQ(d.compute, c10::kQUInt8);
}

}  // namespace
}  // namespace qfx::quant
