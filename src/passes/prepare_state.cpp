// Reading the prepare state from node meta.

#include "qfx/passes/prepare_state.h"

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

}  // namespace qfx::passes
