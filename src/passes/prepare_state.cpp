// Reading the prepare state from node meta.

#include "qfx/passes/prepare_state.h"

#include <any>

namespace qfx::passes {

quant::QConfigAny node_qconfig(const ir::Node& node) {
  auto it = node.meta().find(kQConfigMeta);
  return it == node.meta().end() ? std::nullopt : std::any_cast<quant::QConfigAny>(it->second);
}

bool node_has_none_qconfig(const ir::Node& node) {
  return node.meta().count(kQConfigMeta) > 0 && !node_qconfig(node);
}

bool node_is_observed(const ir::Node& node) { return node.meta().count(kObservedMeta) > 0; }

}  // namespace qfx::passes
