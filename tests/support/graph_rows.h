#pragma once
// Graphs as comparable rows, for tests against torch.fx records.

#include "qfx/ir/graph.h"

namespace qfx::ir {
class GraphModule;
}

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace qfx::test {

/// "name opcode target" per node, in order.
std::vector<std::string> node_rows(const ir::Graph& graph);
/// The same rows from an oracle record's "nodes" list.
std::vector<std::string> node_rows(const nlohmann::json& record);

/// Observer path -> "Type group scale... zero_point..." (group: the first
/// path calling the same module; qparams after calibration, exact).
std::map<std::string, std::string> observer_rows(const ir::GraphModule& gm);
/// The same rows from an oracle record's "observers" object.
std::map<std::string, std::string> observer_rows(const nlohmann::json& observers);

}  // namespace qfx::test
