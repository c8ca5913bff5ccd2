// Graph::lint: the structural invariants every pass must keep. A violation is
// reported with the offending node and the whole graph, so the broken pass can
// be found from the message alone.

#include "qfx/ir/graph.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

namespace qfx::ir {
namespace {

[[noreturn]] void lint_error(const Graph& graph, const Node& node, const std::string& problem) {
  TORCH_CHECK(false, "lint: node %", node.name(), ": ", problem, "\n", graph.to_string());
}

// The nodes' positions in list order, looked up by address (sorted, so
// linting a large graph allocates twice instead of once per node).
class Positions {
 public:
  explicit Positions(const Graph& graph) {
    by_address_.reserve(graph.size());
    for (Node* node : graph.nodes()) by_address_.emplace_back(node, by_address_.size());
    std::sort(by_address_.begin(), by_address_.end());
  }
  /// The position of `node`, or SIZE_MAX when it is not in the graph.
  size_t of(const Node* node) const {
    auto it = std::lower_bound(by_address_.begin(), by_address_.end(), std::make_pair(node, size_t{0}));
    return it != by_address_.end() && it->first == node ? it->second : SIZE_MAX;
  }

 private:
  std::vector<std::pair<const Node*, size_t>> by_address_;
};

// For each position, whether an earlier node has the same name: an open
// addressing table of positions keyed by name (one allocation for the graph,
// linear time).
std::vector<bool> repeated_names(const Graph& graph) {
  std::vector<std::string_view> names;
  names.reserve(graph.size());
  for (Node* node : graph.nodes()) names.emplace_back(node->name());
  size_t slots = 16;
  while (slots < 2 * names.size()) slots *= 2;
  constexpr size_t kEmpty = SIZE_MAX;
  std::vector<size_t> table(slots, kEmpty);
  std::vector<bool> repeated(names.size(), false);
  const std::hash<std::string_view> hash;
  for (size_t i = 0; i < names.size(); ++i) {
    size_t slot = hash(names[i]) & (slots - 1);
    while (table[slot] != kEmpty && names[table[slot]] != names[i]) slot = (slot + 1) & (slots - 1);
    if (table[slot] == kEmpty) {
      table[slot] = i;
    } else {
      repeated[i] = true;
    }
  }
  return repeated;
}

void check_inputs(const Graph& graph, const Node& node, size_t position, const Positions& positions) {
  for (Node* input : node.input_nodes()) {
    if (&input->owning_graph() != &graph) {
      lint_error(graph, node, "input %" + input->name() + " belongs to another graph");
    }
    if (positions.of(input) >= position) {
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
    if (!user->has_input(&node)) {
      lint_error(graph, node, "lists %" + user->name() + " as a user, but it is not an input there");
    }
  }
}

}  // namespace

void Graph::lint() const {
  const Positions positions(*this);
  const std::vector<bool> repeated = repeated_names(*this);
  size_t position = 0;
  for (Node* node : nodes()) {
    if (&node->owning_graph() != this) lint_error(*this, *node, "belongs to another graph");
    if (repeated[position]) lint_error(*this, *node, "duplicate name");
    check_inputs(*this, *node, position, positions);
    check_users(*this, *node);
    if (node->op() == Opcode::kOutput && node != tail_) {
      lint_error(*this, *node, "output node is not the last node");
    }
    if (node->op() == Opcode::kOutput && node->args().size() != 1) {
      lint_error(*this, *node, "output node must have exactly one argument");
    }
    ++position;
  }
}

}  // namespace qfx::ir
