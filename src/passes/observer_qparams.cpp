// ObserverQParams: observers' calculate_qparams ahead of convert's rewrite.

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
    if (obs != nullptr && is_static_int8(*obs) && results_.emplace(obs.get(), Result()).second) {
      observers_.push_back(obs);
    }
  }
  std::vector<Result*> slots;
  for (const auto& obs : observers_) slots.push_back(&results_.at(obs.get()));
  ir::detail::share(observers_.size(), [&](size_t i) {
    Result& result = *slots[i];
    result.warnings.keep_during([&] {
      try {
        result.qparams = observers_[i]->calculate_qparams();
        result.computed = true;
      } catch (const c10::Error&) {
      }
    });
  });
}

quant::QParams ObserverQParams::of(quant::ActivationPostProcess& obs) const {
  auto it = results_.find(&obs);
  if (it == results_.end() || !it->second.computed) return obs.calculate_qparams();
  it->second.warnings.issue();
  return it->second.qparams;
}

}  // namespace qfx::passes::detail
