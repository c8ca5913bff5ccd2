// Dequantize edits shared by convert-to-reference and lower-to-native.

#include "qdq_edits.h"
#include "qfx/ir/op_names.h"

#include <vector>

namespace qfx::passes::detail {

bool is_dequantize(const ir::Argument& arg) {
  return arg.is_node() && arg.to_node()->op() == ir::Opcode::kCallMethod &&
         arg.to_node()->target() == ir::op::kDequantize;
}

ir::Node* insert_dequantize_after(ir::Graph& graph, ir::Node& node) {
  auto guard = graph.inserting_after(&node);
  ir::Node* dequantize = graph.call_method(ir::op::kDequantize, {&node});
  for (ir::Node* user : std::vector<ir::Node*>(node.users())) {
    if (user != dequantize) user->replace_input_with(&node, dequantize);
  }
  return dequantize;
}

ir::Node* replace_with_dequantize(ir::Graph& graph, ir::Node& node) {
  ir::Node* dequantize = nullptr;
  {
    auto guard = graph.inserting_before(&node);
    dequantize = graph.call_method(ir::op::kDequantize, {node.args().at(0)});
  }
  node.replace_all_uses_with(dequantize);
  graph.erase_node(&node);
  return dequantize;
}

void bypass_dequantize(ir::Graph& graph, ir::Node& user, const ir::Argument& arg) {
  if (arg.has_items()) {
    for (const ir::Argument& item : std::vector<ir::Argument>(arg.items())) bypass_dequantize(graph, user, item);
    return;
  }
  if (!is_dequantize(arg)) return;
  ir::Node* dequantize = arg.to_node();
  user.replace_input_with(dequantize, dequantize->args().at(0).to_node());
  if (dequantize->users().empty()) graph.erase_node(dequantize);
}

}  // namespace qfx::passes::detail
