#pragma once
/// \file
/// Text forms of a Graph.
///
/// The IR text form is torch.fx's `print(graph)` with two changes that make it
/// read back (`parse_graph`): `num_users` as in PyTorch 2.x, and strings
/// quoted as Python literals:
/// \code
///   graph():
///       %x : [num_users=1] = placeholder[target=x]
///       %linear : [num_users=1] = call_module[target=linear](args = (%x,), kwargs = {})
///       %to : [num_users=1] = call_method[target=to](args = (%linear, 'cpu'), kwargs = {})
///       return to
/// \endcode
/// The Python form is FX's generated `forward` (`GraphModule.code`).

#include "qfx/ir/argument.h"

#include <string>

namespace qfx::ir {

class Graph;
class Node;

/// An argument as Python source: nodes by name (with a `%` prefix when
/// `node_prefix`), strings and floats as Python `repr` writes them.
std::string format_argument(const Argument& arg, bool node_prefix = true);

/// One node's line of the IR text form.
std::string format_node(const Node& node);

/// The IR text form of a whole graph.
std::string graph_to_string(const Graph& graph);

/// FX's generated Python source for `forward`, byte for byte as
/// `GraphModule.code` prints it for the same graph; `root_module` is the name
/// the code uses for the module (`self`).
std::string python_code(const Graph& graph, const std::string& root_module = "self");

}  // namespace qfx::ir
