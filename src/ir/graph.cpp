// Graph: node creation at the insert point, erasure, copying, lint and dead
// code elimination. Nodes live in an intrusive doubly linked list owned by the
// graph, so insertion and erasure are O(1) and Node pointers stay valid.

#include "qfx/ir/graph.h"

#include "qfx/ir/printer.h"

#include <c10/util/Exception.h>

#include <unordered_set>

namespace qfx::ir {

InsertGuard::InsertGuard(InsertGuard&& other) noexcept : graph_(other.graph_), previous_(other.previous_) {
  other.graph_ = nullptr;
}

InsertGuard::~InsertGuard() {
  if (graph_ != nullptr) graph_->insert_before_ = previous_;
}

Graph::~Graph() {
  Node* node = head_;
  while (node != nullptr) {
    Node* next = node->next_;
    delete node;
    node = next;
  }
}

std::string name_candidate(Opcode op, const std::string& target) {
  std::string base = target;
  if (op == Opcode::kCallFunction) {
    size_t dot = target.rfind('.');
    if (dot != std::string::npos) base = target.substr(dot + 1);
  } else if (base.size() > 4 && base.rfind("__", 0) == 0 && base.compare(base.size() - 2, 2, "__") == 0) {
    base = base.substr(2, base.size() - 4);  // magic method: __getitem__ -> getitem
  }
  return snake_case(base);
}

void Graph::link_before(Node* node, Node* position) {
  Node* prev = position != nullptr ? position->prev_ : tail_;
  node->prev_ = prev;
  node->next_ = position;
  (prev != nullptr ? prev->next_ : head_) = node;
  (position != nullptr ? position->prev_ : tail_) = node;
  ++size_;
}

void Graph::unlink(Node* node) {
  (node->prev_ != nullptr ? node->prev_->next_ : head_) = node->next_;
  (node->next_ != nullptr ? node->next_->prev_ : tail_) = node->prev_;
  node->prev_ = node->next_ = nullptr;
  --size_;
}

Node* Graph::create_node(Opcode op, std::string target, std::vector<Argument> args, Kwargs kwargs,
                         std::string_view name) {
  std::string candidate = name.empty() ? name_candidate(op, target) : std::string(name);
  auto* node = new Node(this, namespace_.create_name(candidate), op, std::move(target));
  node->args_ = std::move(args);
  node->kwargs_ = std::move(kwargs);
  try {
    node->link_inputs();
  } catch (...) {
    node->unlink_inputs();
    delete node;
    throw;
  }
  link_before(node, insert_before_);
  return node;
}

Node* Graph::placeholder(const std::string& name) { return create_node(Opcode::kPlaceholder, name, {}, {}, name); }

Node* Graph::get_attr(const std::string& target) { return create_node(Opcode::kGetAttr, target); }

Node* Graph::call_module(const std::string& target, std::vector<Argument> args, Kwargs kwargs) {
  return create_node(Opcode::kCallModule, target, std::move(args), std::move(kwargs));
}

Node* Graph::call_function(const std::string& target, std::vector<Argument> args, Kwargs kwargs) {
  return create_node(Opcode::kCallFunction, target, std::move(args), std::move(kwargs));
}

Node* Graph::call_method(const std::string& method, std::vector<Argument> args, Kwargs kwargs) {
  return create_node(Opcode::kCallMethod, method, std::move(args), std::move(kwargs));
}

Node* Graph::output(Argument result) { return create_node(Opcode::kOutput, "output", {std::move(result)}); }

Node* Graph::node_copy(const Node& node, const std::function<Argument(Node*)>& arg_transform) {
  std::vector<Argument> args;
  for (const Argument& a : node.args()) args.push_back(map_nodes(a, arg_transform));
  Kwargs kwargs;
  for (const auto& [key, value] : node.kwargs()) {
    kwargs.emplace_back(key, map_nodes(value, arg_transform));
  }
  Node* copy = create_node(node.op(), node.target(), std::move(args), std::move(kwargs), node.name());
  copy->meta_ = node.meta_;
  return copy;
}

InsertGuard Graph::inserting_before(Node* node) {
  TORCH_CHECK(node == nullptr || &node->owning_graph() == this, "inserting_before: node %", node->name(),
              " belongs to another graph");
  InsertGuard guard(this, insert_before_);
  insert_before_ = node;
  return guard;
}

InsertGuard Graph::inserting_after(Node* node) {
  TORCH_CHECK(node != nullptr && &node->owning_graph() == this, "inserting_after: node is not in this graph");
  return inserting_before(node->next_);
}

void Graph::erase_node(Node* node) {
  TORCH_CHECK(&node->owning_graph() == this, "erase_node: node %", node->name(), " belongs to another graph");
  TORCH_CHECK(node->users_.empty(), "erase_node: node %", node->name(), " still has ", node->users_.size(),
              " user(s), the first being %", node->users_.front()->name(), "; replace its uses first");
  TORCH_CHECK(node != insert_before_, "erase_node: node %", node->name(), " is the current insert point");
  node->unlink_inputs();
  unlink(node);
  delete node;
}

std::vector<Node*> Graph::node_list() const {
  std::vector<Node*> list;
  list.reserve(size_);
  for (Node* n : nodes()) list.push_back(n);
  return list;
}

Node* Graph::find_node(std::string_view name) const {
  for (Node* n : nodes()) {
    if (n->name() == name) return n;
  }
  return nullptr;
}

Node* Graph::output_node() const {
  TORCH_CHECK(tail_ != nullptr && tail_->op() == Opcode::kOutput, "graph has no output node");
  return tail_;
}

namespace {

bool is_impure(const Node& node) {
  if (node.op() == Opcode::kPlaceholder || node.op() == Opcode::kOutput) return true;
  // FX's _side_effectful_functions: an assertion is kept with no users
  if (node.op() == Opcode::kCallFunction && node.target() == "torch._assert") return true;
  // x[i] = v acts through x (FX keeps it too: its graph never reaches DCE)
  if (node.op() == Opcode::kCallFunction && node.target() == "operator.setitem") return true;
  // In-place methods (`add_`, `relu_`) act through their first argument.
  const std::string& t = node.target();
  return node.op() == Opcode::kCallMethod && !t.empty() && t.back() == '_' && t.rfind("__", 0) != 0;
}

}  // namespace

bool Graph::eliminate_dead_code() {
  bool changed = false;
  Node* node = tail_;
  while (node != nullptr) {
    Node* prev = node->prev_;
    if (node->users_.empty() && !is_impure(*node)) {
      erase_node(node);
      changed = true;
    }
    node = prev;
  }
  return changed;
}

std::string Graph::to_string() const { return graph_to_string(*this); }

std::unique_ptr<Graph> Graph::clone(std::unordered_map<const Node*, Node*>* node_map) const {
  auto copy = std::make_unique<Graph>();
  std::unordered_map<const Node*, Node*> local;
  auto& map = node_map != nullptr ? *node_map : local;
  for (Node* n : nodes()) {
    map[n] = copy->node_copy(*n, [&map](Node* input) -> Argument { return map.at(input); });
  }
  return copy;
}

}  // namespace qfx::ir
