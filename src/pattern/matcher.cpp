// Matching a forward-order pattern at a node: walk from the pattern's output
// element back through the positional arguments, as PyTorch's is_match does.

#include "qfx/pattern/matcher.h"

#include "qfx/ir/module_registry.h"
#include "qfx/ir/printer.h"

#include <algorithm>
#include <numeric>

namespace qfx::pattern {
namespace {

/// Binds element `index` (and its inputs) to `value`; false if it does not
/// match, saying why in `why` when it is given.
bool bind_element(const Pattern& pattern, size_t index, const ir::Argument& value, const ir::GraphModule& gm,
                  std::vector<ir::Argument>& values, std::string* why) {
  const Pattern::Element& element = pattern.elements()[index];
  auto decline = [&](const std::string& reason) {
    if (why != nullptr) *why = reason;
    return false;
  };
  ir::Node* node = value.is_node() ? value.to_node() : nullptr;
  if (element.op.kind == OpKind::kClass) {
    if (!element.test(value, gm)) {
      return decline(ir::format_argument(value) + " is not " + element.op.name);
    }
  } else if (element.op.is_any()) {
    values[index] = value;
    return true;
  } else if (!node) {
    return decline("an argument is not a node where the pattern has " + element.op.name);
  } else if (!op_matches(element.op, *node, gm)) {
    std::string actual = op_name_of(*node, gm);
    return decline("%" + node->name() + " is " +
                   (actual.empty() ? "a " + std::string(ir::opcode_name(node->op())) : actual) + ", not " +
                   element.op.name);
  }
  if (node && node->users().size() > element.max_users) {  // its value is needed elsewhere
    return decline("%" + node->name() + " has " + std::to_string(node->users().size()) +
                   " users (a fused value may have one)");
  }
  values[index] = value;
  if (element.inputs.empty()) return true;
  size_t n_args = node ? node->args().size() : 0;
  if (element.more_args ? n_args < element.inputs.size() : n_args != element.inputs.size()) {
    return decline(ir::format_argument(value) + " has " + std::to_string(n_args) + " arguments, the pattern " +
                   (element.more_args ? "at least " : "") + std::to_string(element.inputs.size()));
  }
  for (size_t i = 0; i < element.inputs.size(); ++i) {
    if (!bind_element(pattern, element.inputs[i], node->args()[i], gm, values, why)) return false;
  }
  return true;
}

}  // namespace

std::string op_name_of(const ir::Node& node, const ir::GraphModule& gm) {
  switch (node.op()) {
    case ir::Opcode::kCallModule: return ir::module_type_name(*gm.get_submodule(node.target()));
    case ir::Opcode::kCallFunction: return canonical_op_name(node.target());
    case ir::Opcode::kCallMethod: return node.target();
    default: return "";
  }
}

std::optional<ir::Opcode> opcode_of(OpKind kind) {
  switch (kind) {
    case OpKind::kModule: return ir::Opcode::kCallModule;
    case OpKind::kFunction: return ir::Opcode::kCallFunction;
    case OpKind::kMethod: return ir::Opcode::kCallMethod;
    case OpKind::kAny:
    case OpKind::kClass: break;
  }
  return std::nullopt;
}

bool op_matches(const PatternOp& op, const ir::Node& node, const ir::GraphModule& gm) {
  TORCH_CHECK(op.kind != OpKind::kClass, "op_matches: the class ", op.name, " is matched by its element's test");
  return op.is_any() || (node.op() == opcode_of(op.kind) && op_name_of(node, gm) == op.name);
}

bool op_matches_named(const PatternOp& op, const ir::Node& node, const std::string& node_op_name) {
  TORCH_CHECK(op.kind != OpKind::kClass, "op_matches: the class ", op.name, " is matched by its element's test");
  return op.is_any() || (node.op() == opcode_of(op.kind) && node_op_name == op.name);
}

std::optional<PatternMatch> match_at(const Pattern& pattern, ir::Node& node, const ir::GraphModule& gm) {
  if (pattern.empty()) return std::nullopt;
  PatternMatch match;
  match.pattern = &pattern;
  match.values.resize(pattern.elements().size());
  if (!bind_element(pattern, pattern.elements().size() - 1, ir::Argument(&node), gm, match.values, nullptr)) {
    return std::nullopt;
  }
  return match;
}

std::string why_no_match(const Pattern& pattern, ir::Node& node, const ir::GraphModule& gm) {
  if (pattern.empty()) return "the pattern is empty";
  std::vector<ir::Argument> values(pattern.elements().size());
  std::string why;
  bind_element(pattern, pattern.elements().size() - 1, ir::Argument(&node), gm, values, &why);
  return why;
}

bool element_accepts(const Pattern& pattern, size_t index, const ir::Argument& value, const ir::GraphModule& gm) {
  const Pattern::Element& element = pattern.elements().at(index);
  if (element.op.kind == OpKind::kClass) return element.test(value, gm);
  return element.op.is_any() || (value.is_node() && op_matches(element.op, *value.to_node(), gm));
}

std::string why_not_at(const Pattern& pattern, size_t anchor, ir::Node& node, const ir::GraphModule& gm) {
  std::vector<size_t> path = pattern.path_to(anchor);  // output ... anchor
  TORCH_CHECK(!path.empty(), "why_not_at: element ", anchor, " is not in the pattern");
  std::vector<ir::Node*> reached = {&node};  // the nodes `node`'s value reaches, one step per path element
  for (size_t step = path.size() - 1; step > 0 && !reached.empty(); --step) {
    std::vector<ir::Node*> next;
    for (ir::Node* n : reached) {
      for (ir::Node* user : n->users()) {
        if (element_accepts(pattern, path[step - 1], ir::Argument(user), gm)) next.push_back(user);
      }
    }
    reached = std::move(next);
  }
  if (reached.empty()) {
    std::string route;
    for (size_t i = path.size() - 1; i-- > 0;)
      route += (route.empty() ? "" : " -> ") + pattern.elements()[path[i]].op.name;
    return "its value does not go to " + route;
  }
  std::string why;
  for (ir::Node* output : reached) {
    std::optional<PatternMatch> match = match_at(pattern, *output, gm);
    if (match && match->node(anchor) == &node) return "";
    if (why.empty())
      why = match ? "the match at %" + output->name() + " binds another node" : why_no_match(pattern, *output, gm);
  }
  return why;
}

std::vector<size_t> match_order(const std::vector<const Pattern*>& patterns) {
  std::vector<size_t> order(patterns.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return patterns[a]->elements().size() > patterns[b]->elements().size(); });
  return order;
}

}  // namespace qfx::pattern
