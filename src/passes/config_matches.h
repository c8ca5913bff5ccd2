#pragma once
// Matching a BackendConfig's patterns at a node, in PyTorch's order (longest
// pattern first, ties in config order). Shared by fuse and insert-observers.

#include "qfx/backend/backend_config.h"
#include "qfx/ir/graph_module.h"

#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace qfx::passes::detail {

/// The configs `keep` accepts (all when empty), in matching order.
std::vector<const backend::BackendPatternConfig*> configs_in_match_order(
    const backend::BackendConfig& backend, const std::function<bool(const backend::BackendPatternConfig&)>& keep = {});

/// The first of `configs` whose pattern matches with its output at `node`
/// (the node's op is looked up once; configs with another output op are skipped).
std::optional<std::pair<const backend::BackendPatternConfig*, pattern::PatternMatch>> first_match(
    const std::vector<const backend::BackendPatternConfig*>& configs, ir::Node& node, const ir::GraphModule& gm);

}  // namespace qfx::passes::detail
