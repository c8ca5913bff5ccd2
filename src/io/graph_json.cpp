// Graph -> JSON, one object per node.

#include "qfx/io/graph_json.h"

#include "qfx/ir/graph.h"
#include "qfx/ir/python_literals.h"

#include <nlohmann/json.hpp>

#include <cmath>

namespace qfx::io {

nlohmann::json argument_to_json(const ir::Argument& arg) {
  using Kind = ir::Argument::Kind;
  auto items = [&arg] {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& item : arg.items()) list.push_back(argument_to_json(item));
    return list;
  };
  switch (arg.kind()) {
    case Kind::kNone: return nullptr;
    case Kind::kNode: return {{"node", arg.to_node()->name()}};
    case Kind::kBool: return arg.to_bool();
    case Kind::kInt: return arg.to_int();
    case Kind::kDouble:
      if (!std::isfinite(arg.to_double())) return {{"float", ir::python_float_repr(arg.to_double())}};
      return arg.to_double();
    case Kind::kString: return arg.to_string();
    case Kind::kDtype: return {{"dtype", ir::dtype_name(arg.to_dtype())}};
    case Kind::kLayout: return {{"layout", ir::layout_name(arg.to_layout())}};
    case Kind::kMemoryFormat: return {{"memory_format", ir::memory_format_name(arg.to_memory_format())}};
    case Kind::kList: return items();
    case Kind::kTuple: return {{"tuple", items()}};
    case Kind::kSlice: return {{"slice", items()}};
    case Kind::kEllipsis: return {{"ellipsis", true}};
  }
  return nullptr;
}

nlohmann::json graph_to_json(const ir::Graph& graph) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const ir::Node* node : graph.nodes()) {
    nlohmann::json args = nlohmann::json::array();
    for (const auto& a : node->args()) args.push_back(argument_to_json(a));
    nlohmann::json kwargs = nlohmann::json::object();
    for (const auto& [key, value] : node->kwargs()) kwargs[key] = argument_to_json(value);
    nodes.push_back({{"name", node->name()},
                     {"op", ir::opcode_name(node->op())},
                     {"target", node->target()},
                     {"args", args},
                     {"kwargs", kwargs}});
  }
  return {{"nodes", nodes}};
}

}  // namespace qfx::io
