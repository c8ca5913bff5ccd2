// Graph::lint: the structural invariants every pass must keep. A violation is
// reported with the offending node and the whole graph, so the broken pass can
// be found from the message alone.

#include "qfx/ir/graph.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <unordered_set>

namespace qfx::ir {
namespace {

[[noreturn]] void lint_error(const Graph& graph, const Node& node, const std::string& problem) {
  TORCH_CHECK(false, "lint: node %", node.name(), ": ", problem, "\n", graph.to_string());
}

void check_inputs(const Graph& graph, const Node& node,
                  const std::unordered_set<const Node*>& defined) {
  for (Node* input : node.input_nodes()) {
    if (&input->owning_graph() != &graph) {
      lint_error(graph, node, "input %" + input->name() + " belongs to another graph");
    }
    if (defined.count(input) == 0) {
      lint_error(graph, node, "input %" + input->name() + " is used before it is defined");
    }
    const auto& users = input->users();
    if (std::count(users.begin(), users.end(), &node) != 1) {
      lint_error(graph, node, "not listed exactly once among the users of %" + input->name());
    }
  }
}

void check_users(const Graph& graph, const Node& node) {
  for (Node* user : node.users()) {
    auto inputs = user->input_nodes();
    if (std::find(inputs.begin(), inputs.end(), &node) == inputs.end()) {
      lint_error(graph, node, "lists %" + user->name() + " as a user, but it is not an input there");
    }
  }
}

}  // namespace

void Graph::lint() const {
  std::unordered_set<const Node*> defined;
  std::unordered_set<std::string> names;
  for (Node* node : nodes()) {
    if (&node->owning_graph() != this) lint_error(*this, *node, "belongs to another graph");
    if (!names.insert(node->name()).second) lint_error(*this, *node, "duplicate name");
    check_inputs(*this, *node, defined);
    check_users(*this, *node);
    if (node->op() == Opcode::kOutput && node != tail_) {
      lint_error(*this, *node, "output node is not the last node");
    }
    if (node->op() == Opcode::kOutput && node->args().size() != 1) {
      lint_error(*this, *node, "output node must have exactly one argument");
    }
    defined.insert(node);
  }
}

}  // namespace qfx::ir
