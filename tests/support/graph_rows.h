#pragma once
// Graphs as comparable rows, for tests against torch.fx records.

#include "qfx/ir/graph.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace qfx::test {

/// "name opcode target" per node, in order.
std::vector<std::string> node_rows(const ir::Graph& graph);
/// The same rows from an oracle record's "nodes" list.
std::vector<std::string> node_rows(const nlohmann::json& record);

}  // namespace qfx::test
