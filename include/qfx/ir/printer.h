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

#include <functional>
#include <string>
#include <vector>

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

/// What python_code can print differently (TorchScript export).
struct CodegenHooks {
  /// The expression a call_module node becomes, given its printed arguments;
  /// unset: `self.path(args)`.
  std::function<std::string(const Node&, const std::vector<std::string>&)> call_module;
  /// FX's `;  x = None` after a value's last use (TorchScript cannot retype
  /// a variable, so export turns it off).
  bool release_values = true;
  /// Indexes as Python's subscript syntax (`x[:, 0:12]`) instead of FX's
  /// slice objects (`x[(slice(None, None, None), slice(0, 12, None))]`).
  bool subscript_syntax = false;
  /// An in-place operator form and its result on two lines (`x[i] = v` then
  /// `setitem = x`) instead of FX's `x[i] = v;  setitem = x`, which
  /// TorchScript's parser rejects.
  bool one_statement_per_line = false;
  /// The type annotation of a placeholder's argument (`List[Tensor]`), or
  /// "" for none; unset: none (FX prints node.type, which qfx does not keep).
  std::function<std::string(const Node&)> placeholder_type;
};
std::string python_code(const Graph& graph, const std::string& root_module, const CodegenHooks& hooks);

}  // namespace qfx::ir
