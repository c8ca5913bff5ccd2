#pragma once
/// \file
/// What insert-observers leaves in node meta for convert: each node's qconfig
/// (PyTorch's `_qconfig_map`) and whether the node was observed
/// (`_observed_node_names`).

#include "qfx/ir/graph_module.h"
#include "qfx/ir/node.h"
#include "qfx/quant/qconfig.h"

namespace qfx::passes {

/// `meta()[kQConfigMeta]` holds a quant::QConfigAny.
inline constexpr const char* kQConfigMeta = "qconfig";
/// `meta()[kObservedMeta]` holds `true` for nodes of an observed pattern.
inline constexpr const char* kObservedMeta = "observed";

/// `meta()[kFloatReasonMeta]` holds a std::string: why a node with a
/// qconfig stays float (the backend cannot honour it).
inline constexpr const char* kFloatReasonMeta = "float_reason";

/// `meta()[kPreparedNameMeta]` holds a std::string: the name a node had in
/// the prepared model. convert-to-reference sets it on every node, and
/// lowering copies it onto the quantized op that replaces a float one
/// (`add` becomes `add_1 = torch.ops.quantized.add(...)`), so a lowered node
/// can be traced back to the node its qconfig belongs to.
inline constexpr const char* kPreparedNameMeta = "prepared_name";

/// The name `node` had in the prepared model (kPreparedNameMeta), else its own.
std::string prepared_name(const ir::Node& node);

/// The qconfig insert-observers gave `node` (nullopt if none or not
/// prepared), as kept in its meta: valid while that entry stays.
const quant::QConfigAny& node_qconfig(const ir::Node& node);
/// True when insert-observers resolved a None qconfig for `node` (PyTorch's
/// has_none_qconfig / should_skip_lowering); false for nodes it never saw.
bool node_has_none_qconfig(const ir::Node& node);
/// True when insert-observers observed `node`'s pattern.
bool node_is_observed(const ir::Node& node);

/// True when `node` calls an observer or fake-quantize module of `gm`.
bool is_observer_node(const ir::Node& node, const ir::GraphModule& gm);

}  // namespace qfx::passes
