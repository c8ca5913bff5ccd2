// Node: argument updates keep the users lists right, as torch.fx's
// Node.__update_args_kwargs does — the node leaves the users of its old inputs
// and joins, at the end, the users of its new ones.

#include "qfx/ir/node.h"

#include "qfx/ir/graph.h"
#include "qfx/ir/printer.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <array>

namespace qfx::ir {
namespace {

constexpr std::array<std::pair<Opcode, const char*>, 6> kOpcodeNames{{
    {Opcode::kPlaceholder, "placeholder"},
    {Opcode::kGetAttr, "get_attr"},
    {Opcode::kCallFunction, "call_function"},
    {Opcode::kCallModule, "call_module"},
    {Opcode::kCallMethod, "call_method"},
    {Opcode::kOutput, "output"},
}};

}  // namespace

const char* opcode_name(Opcode op) {
  for (const auto& [code, name] : kOpcodeNames) {
    if (code == op) return name;
  }
  return "?";
}

std::optional<Opcode> parse_opcode(std::string_view name) {
  for (const auto& [code, spelling] : kOpcodeNames) {
    if (name == spelling) return code;
  }
  return std::nullopt;
}

Node::Node(Graph* graph, std::string name, Opcode op, std::string target)
    : graph_(graph), name_(std::move(name)), op_(op), target_(std::move(target)) {}

const Argument* Node::kwarg(std::string_view key) const {
  for (const auto& [name, value] : kwargs_) {
    if (name == key) return &value;
  }
  return nullptr;
}

std::vector<Node*> Node::input_nodes() const {
  std::vector<Node*> inputs;
  auto add = [&inputs](Node* n) {
    if (std::find(inputs.begin(), inputs.end(), n) == inputs.end()) inputs.push_back(n);
  };
  for (const Argument& a : args_) for_each_node(a, add);
  for (const auto& kv : kwargs_) for_each_node(kv.second, add);
  return inputs;
}

bool Node::has_input(const Node* node) const {
  bool found = false;
  auto check = [node, &found](Node* n) { found = found || n == node; };
  for (const Argument& a : args_) for_each_node(a, check);
  for (const auto& kv : kwargs_) for_each_node(kv.second, check);
  return found;
}

void Node::unlink_inputs() {
  for (Node* input : input_nodes()) {
    auto& users = input->users_;
    users.erase(std::remove(users.begin(), users.end(), this), users.end());
  }
}

void Node::link_inputs() {
  for (Node* input : input_nodes()) {
    TORCH_CHECK(&input->owning_graph() == graph_, "node %", name_, ": input %", input->name(),
                " belongs to another graph");
    input->users_.push_back(this);
  }
}

void Node::set_args(std::vector<Argument> args) {
  unlink_inputs();
  args_ = std::move(args);
  link_inputs();
}

void Node::set_kwargs(Kwargs kwargs) {
  unlink_inputs();
  kwargs_ = std::move(kwargs);
  link_inputs();
}

void Node::set_arg(size_t index, Argument value) {
  TORCH_CHECK(index < args_.size(), "node %", name_, ": no argument ", index);
  std::vector<Argument> args = args_;
  args[index] = std::move(value);
  set_args(std::move(args));
}

void Node::set_kwarg(const std::string& key, Argument value) {
  Kwargs kwargs = kwargs_;
  auto it = std::find_if(kwargs.begin(), kwargs.end(), [&key](const auto& kv) { return kv.first == key; });
  if (it == kwargs.end()) {
    kwargs.emplace_back(key, std::move(value));
  } else {
    it->second = std::move(value);
  }
  set_kwargs(std::move(kwargs));
}

void Node::prepend(Node* node) {
  TORCH_CHECK(&node->owning_graph() == graph_, "prepend: node %", node->name(), " belongs to another graph");
  if (node == this) return;  // moving a node before itself changes nothing
  graph_->unlink(node);
  graph_->link_before(node, this);
}

void Node::append(Node* node) {
  if (next_ != nullptr) {
    next_->prepend(node);
    return;
  }
  TORCH_CHECK(&node->owning_graph() == graph_, "append: node %", node->name(), " belongs to another graph");
  if (node == this) return;
  graph_->unlink(node);
  graph_->link_before(node, nullptr);
}

std::vector<Node*> Node::replace_all_uses_with(Node* replacement, const std::function<bool(Node*)>& filter) {
  std::vector<Node*> changed;
  for (Node* user : std::vector<Node*>(users_)) {
    if (filter && !filter(user)) continue;
    user->replace_input_with(this, replacement);
    changed.push_back(user);
  }
  return changed;
}

void Node::replace_input_with(Node* old_input, Node* new_input) {
  auto swap = [&](Node* n) -> Argument { return n == old_input ? new_input : n; };
  std::vector<Argument> args;
  args.reserve(args_.size());
  for (const Argument& a : args_) args.push_back(map_nodes(a, swap));
  Kwargs kwargs;
  for (const auto& [key, value] : kwargs_) kwargs.emplace_back(key, map_nodes(value, swap));
  unlink_inputs();
  args_ = std::move(args);
  kwargs_ = std::move(kwargs);
  link_inputs();
}

std::string Node::format() const { return format_node(*this); }

NodeScope node_scope(const Node& node) {
  auto it = node.meta().find(kScopeMeta);
  return it == node.meta().end() ? NodeScope{} : std::any_cast<NodeScope>(it->second);
}

}  // namespace qfx::ir
