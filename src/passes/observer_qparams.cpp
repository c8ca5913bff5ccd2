// ObserverQParams: observers' calculate_qparams beside convert's rewrite.

#include "observer_qparams.h"

#include "quant_matches.h"
#include "qfx/quant/simple_observers.h"

namespace qfx::passes::detail {

bool is_static_int8(const quant::ActivationPostProcess& obs) {
  c10::ScalarType dtype = obs.dtype();
  return (dtype == c10::kQUInt8 || dtype == c10::kQInt8) &&
         dynamic_cast<const quant::PlaceholderObserverImpl*>(&obs) == nullptr;
}

ObserverQParams::ObserverQParams(const ir::GraphModule& gm) {
  for (ir::Node* node : gm.graph().nodes()) {
    if (node->op() != ir::Opcode::kCallModule || !is_observer_node(*node, gm)) continue;
    auto obs = std::dynamic_pointer_cast<quant::ActivationPostProcess>(gm.get_submodule(node->target()));
    if (obs != nullptr && is_static_int8(*obs) && index_.emplace(obs.get(), observers_.size()).second) {
      observers_.push_back(obs);
    }
  }
  results_ = std::make_unique<ir::detail::Beside<quant::QParams>>(
      observers_.size(), [this](size_t i) { return observers_[i]->calculate_qparams(); });
}

quant::QParams ObserverQParams::of(quant::ActivationPostProcess& obs) {
  auto it = index_.find(&obs);
  return it != index_.end() ? results_->take(it->second) : obs.calculate_qparams();
}

}  // namespace qfx::passes::detail
