#include "graph_rows.h"

#include "qfx/ir/node.h"

namespace qfx::test {

std::vector<std::string> node_rows(const ir::Graph& graph) {
  std::vector<std::string> rows;
  for (const ir::Node* n : graph.nodes()) rows.push_back(n->name() + " " + ir::opcode_name(n->op()) + " " + n->target());
  return rows;
}

std::vector<std::string> node_rows(const nlohmann::json& record) {
  std::vector<std::string> rows;
  for (const auto& n : record["nodes"]) {
    rows.push_back(n["name"].get<std::string>() + " " + n["op"].get<std::string>() + " " + n["target"].get<std::string>());
  }
  return rows;
}

}  // namespace qfx::test
