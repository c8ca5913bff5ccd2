#pragma once
// Each node's qconfig from a QConfigMapping, with PyTorch's updates for
// fused modules (update_qconfig_for_fusion) and QAT modules
// (_update_qconfig_for_qat): they take the object-type qconfig of the
// modules they were made from.

#include "qfx/ir/graph_module.h"
#include "qfx/quant/qconfig_mapping.h"

#include <unordered_map>

namespace qfx::passes::detail {

/// generate_qconfig_map on the mapping updated for the graph's fused and
/// QAT modules; c10::Error when the parts of a fused module have different
/// object-type qconfigs.
std::unordered_map<const ir::Node*, quant::QConfigAny> node_qconfigs(const ir::GraphModule& gm,
                                                                     const quant::QConfigMapping& mapping);

}  // namespace qfx::passes::detail
