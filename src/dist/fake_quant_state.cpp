// Fake-quantize statistics and the qparams made from them.

#include "fake_quant_state.h"

#include "qfx/quant/fake_quantize.h"
#include "qfx/quant/min_max_observers.h"

#include <ATen/ATen.h>

namespace qfx::dist::detail {

quant::ActivationPostProcess& statistics_of(quant::ActivationPostProcess& observer) {
  if (auto* fq = dynamic_cast<quant::FakeQuantizeImpl*>(&observer)) return fq->observer();
  if (auto* fused = dynamic_cast<quant::FusedMovingAvgObsFakeQuantizeImpl*>(&observer)) {
    return *fused->activation_post_process;
  }
  return observer;
}

void refresh_qparams(quant::ActivationPostProcess& observer) {
  auto* stats = dynamic_cast<quant::MinMaxStatsObserver*>(&statistics_of(observer));
  if (stats == nullptr || stats->min_val.numel() == 0 || !at::isfinite(stats->min_val).all().item<bool>()) return;
  auto set = [&](at::Tensor& scale, at::Tensor& zero_point) {
    quant::QParams q = observer.calculate_qparams();
    scale.resize_(q.scale.sizes()).copy_(q.scale);
    zero_point.resize_(q.zero_point.sizes()).copy_(q.zero_point);
  };
  if (auto* fq = dynamic_cast<quant::FakeQuantizeImpl*>(&observer)) set(fq->scale, fq->zero_point);
  if (auto* fused = dynamic_cast<quant::FusedMovingAvgObsFakeQuantizeImpl*>(&observer)) {
    set(fused->scale, fused->zero_point);
  }
}

}  // namespace qfx::dist::detail
