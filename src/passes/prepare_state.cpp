// Reading the prepare state from node meta.

#include "qfx/passes/prepare_state.h"

#include "qfx/quant/observer_base.h"

#include <any>

namespace qfx::passes {

namespace {

/// The qconfig in `node`'s meta, nullptr when it has none.
const quant::QConfigAny* qconfig_in_meta(const ir::Node& node) {
  auto it = node.meta().find(kQConfigMeta);
  return it == node.meta().end() ? nullptr : std::any_cast<quant::QConfigAny>(&it->second);
}

}  // namespace

const quant::QConfigAny& node_qconfig(const ir::Node& node) {
  static const quant::QConfigAny kNone;
  const quant::QConfigAny* qconfig = qconfig_in_meta(node);
  return qconfig != nullptr ? *qconfig : kNone;
}

bool node_has_none_qconfig(const ir::Node& node) {
  const quant::QConfigAny* qconfig = qconfig_in_meta(node);
  return qconfig != nullptr && !qconfig->has_value();
}

bool node_is_observed(const ir::Node& node) { return node.meta().count(kObservedMeta) > 0; }

bool is_observer_node(const ir::Node& node, const ir::GraphModule& gm) {
  if (node.op() != ir::Opcode::kCallModule) return false;
  return dynamic_cast<const quant::ActivationPostProcess*>(gm.get_submodule(node.target()).get()) != nullptr;
}

std::string prepared_name(const ir::Node& node) {
  auto it = node.meta().find(kPreparedNameMeta);
  return it == node.meta().end() ? node.name() : std::any_cast<std::string>(it->second);
}

}  // namespace qfx::passes
