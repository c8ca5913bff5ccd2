// IR text form: torch.fx's Node.format_node / Graph.__str__ layout, with
// quoted strings so that parse_graph can read it back.

#include "qfx/ir/printer.h"

#include "qfx/ir/graph.h"
#include "qfx/ir/python_literals.h"

namespace qfx::ir {
namespace {

std::string join_items(const Argument::Items& items, bool node_prefix) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += format_argument(items[i], node_prefix);
  }
  return out;
}

std::string format_args_and_kwargs(const Node& node) {
  std::string args = format_argument(Argument::tuple(node.args()));
  std::string kwargs;
  for (const auto& [key, value] : node.kwargs()) {
    if (!kwargs.empty()) kwargs += ", ";
    kwargs += key + ": " + format_argument(value);
  }
  return "(args = " + args + ", kwargs = {" + kwargs + "})";
}

}  // namespace

std::string format_argument(const Argument& arg, bool node_prefix) {
  switch (arg.kind()) {
    case Argument::Kind::kNone: return "None";
    case Argument::Kind::kNode: return (node_prefix ? "%" : "") + arg.to_node()->name();
    case Argument::Kind::kBool: return arg.to_bool() ? "True" : "False";
    case Argument::Kind::kInt: return std::to_string(arg.to_int());
    case Argument::Kind::kDouble: return python_float_repr(arg.to_double());
    case Argument::Kind::kString: return python_str_repr(arg.to_string());
    case Argument::Kind::kDtype: return dtype_name(arg.to_dtype());
    case Argument::Kind::kLayout: return layout_name(arg.to_layout());
    case Argument::Kind::kMemoryFormat: return memory_format_name(arg.to_memory_format());
    case Argument::Kind::kList: return "[" + join_items(arg.items(), node_prefix) + "]";
    case Argument::Kind::kTuple: {
      const auto& items = arg.items();
      return "(" + join_items(items, node_prefix) + (items.size() == 1 ? ",)" : ")");
    }
    case Argument::Kind::kSlice: return "slice(" + join_items(arg.items(), node_prefix) + ")";
    case Argument::Kind::kEllipsis: return "Ellipsis";
  }
  return "?";
}

std::string format_node(const Node& node) {
  if (node.op() == Opcode::kOutput) {
    return "return " + format_argument(node.args().at(0), /*node_prefix=*/false);
  }
  std::string head = "%" + node.name() + " : [num_users=" + std::to_string(node.users().size()) +
                     "] = " + opcode_name(node.op()) + "[target=" + node.target() + "]";
  if (node.op() == Opcode::kPlaceholder) {
    return node.args().empty() ? head : head + "(default=" + format_argument(node.args()[0]) + ")";
  }
  if (node.op() == Opcode::kGetAttr) return head;
  return head + format_args_and_kwargs(node);
}

std::string graph_to_string(const Graph& graph) {
  std::string out = "graph():";
  for (Node* node : graph.nodes()) out += "\n    " + format_node(*node);
  return out;
}

}  // namespace qfx::ir
