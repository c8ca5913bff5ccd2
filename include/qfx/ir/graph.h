#pragma once
/// \file
/// Graph: an ordered list of Nodes, as `torch.fx.Graph`. Nodes are created at
/// the insert point (the end, unless an `inserting_before/after` guard is
/// active), named by FX's rules, and erased only when nothing uses them.

#include "qfx/ir/argument.h"
#include "qfx/ir/namespace.h"
#include "qfx/ir/node.h"

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace qfx::ir {

class Graph;

/// Restores a Graph's previous insert point when it goes out of scope.
class InsertGuard {
 public:
  InsertGuard(InsertGuard&& other) noexcept;
  InsertGuard(const InsertGuard&) = delete;
  InsertGuard& operator=(const InsertGuard&) = delete;
  InsertGuard& operator=(InsertGuard&&) = delete;
  ~InsertGuard();

 private:
  friend class Graph;
  InsertGuard(Graph* graph, Node* previous) : graph_(graph), previous_(previous) {}
  Graph* graph_;
  Node* previous_;
};

/// Forward iteration over a Graph's nodes (safe to erase the current node
/// only if the loop has already fetched the next one; collect first, then
/// mutate).
class NodeIterator {
 public:
  explicit NodeIterator(Node* node) : node_(node) {}
  Node* operator*() const { return node_; }
  NodeIterator& operator++() {
    node_ = node_->next();
    return *this;
  }
  bool operator!=(const NodeIterator& other) const { return node_ != other.node_; }

 private:
  Node* node_;
};

/// A range of nodes for range-for loops.
class NodeRange {
 public:
  explicit NodeRange(Node* first) : first_(first) {}
  NodeIterator begin() const { return NodeIterator(first_); }
  NodeIterator end() const { return NodeIterator(nullptr); }

 private:
  Node* first_;
};

/// A dataflow graph of Nodes in execution order.
///
/// Example:
/// \code
///   Graph g;
///   Node* x = g.placeholder("x");
///   Node* y = g.call_module("linear", {x});
///   g.output(y);
///   g.lint();
/// \endcode
class Graph {
 public:
  Graph() = default;
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// Creates a node at the insert point. `name` (or, if empty, a name derived
  /// from the target as FX does) is made unique by the graph's Namespace.
  Node* create_node(Opcode op, std::string target, std::vector<Argument> args = {}, Kwargs kwargs = {},
                    std::string_view name = {});
  /// A forward() input named `name` (node name as FX makes it: `input` -> `input_1`).
  Node* placeholder(const std::string& name);
  /// The attribute at a dotted path of the owning GraphModule.
  Node* get_attr(const std::string& target);
  /// A call of the submodule at a dotted path.
  Node* call_module(const std::string& target, std::vector<Argument> args, Kwargs kwargs = {});
  /// A call of a function by qualified name (`torch.flatten`, `operator.add`).
  Node* call_function(const std::string& target, std::vector<Argument> args, Kwargs kwargs = {});
  /// A call of method `method` on args[0] (`view`, `size`).
  Node* call_method(const std::string& method, std::vector<Argument> args, Kwargs kwargs = {});
  /// The graph's result (a node, or a tuple/list of them).
  Node* output(Argument result);

  /// Copies `node` (possibly from another graph) to the insert point, mapping
  /// its input nodes through `arg_transform`. Keeps the name if free.
  Node* node_copy(const Node& node, const std::function<Argument(Node*)>& arg_transform);

  /// New nodes go just before `node` until the guard is destroyed.
  [[nodiscard]] InsertGuard inserting_before(Node* node);
  /// New nodes go just after `node` (in creation order) until the guard dies.
  [[nodiscard]] InsertGuard inserting_after(Node* node);

  /// Removes `node`; raises c10::Error if it still has users.
  void erase_node(Node* node);

  /// The nodes in order, for range-for loops.
  NodeRange nodes() const { return NodeRange(head_); }
  /// Nodes as a vector (a snapshot, safe to mutate the graph while walking it).
  std::vector<Node*> node_list() const;
  /// First and last node; nullptr when empty.
  Node* first() const { return head_; }
  Node* last() const { return tail_; }
  /// Number of nodes.
  size_t size() const { return size_; }
  /// The node named `name`, or nullptr (linear search; for tools and tests).
  Node* find_node(std::string_view name) const;
  /// The output node; raises c10::Error if the graph has none.
  Node* output_node() const;

  /// Checks the invariants: inputs are nodes of this graph defined before
  /// use, users match inputs, names are unique, at most one output, last.
  /// Raises c10::Error naming the node, with the graph text.
  void lint() const;
  /// Erases nodes without users, except placeholders, outputs and in-place
  /// methods; returns whether anything was erased.
  bool eliminate_dead_code();

  /// The IR text form (see printer.h); `parse_graph` reads it back.
  std::string to_string() const;
  /// FX's generated Python source of forward() (`GraphModule.code`).
  std::string python_code(const std::string& root_module = "self") const;

  /// A deep copy; `node_map` (optional) receives old -> new node pointers.
  std::unique_ptr<Graph> clone(std::unordered_map<const Node*, Node*>* node_map = nullptr) const;

  /// The names in use (for passes that name attributes or modules alike).
  Namespace& name_space() { return namespace_; }

 private:
  friend class InsertGuard;
  void link_before(Node* node, Node* position);
  void unlink(Node* node);
  friend class Node;

  Namespace namespace_;
  Node* head_ = nullptr;
  Node* tail_ = nullptr;
  size_t size_ = 0;
  Node* insert_before_ = nullptr;  ///< nullptr: append at the end
};

/// The FX name candidate for a target: module and attribute paths as given,
/// function qualified names by their last component, snake_cased
/// (`torch.nn.functional.relu` -> `relu`, `layer1.0.conv` -> `layer1.0.conv`).
std::string name_candidate(Opcode op, const std::string& target);

}  // namespace qfx::ir
