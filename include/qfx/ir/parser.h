#pragma once
/// \file
/// parse_graph: reads the IR text form that Graph::to_string writes (and
/// torch.fx's `print(graph)` with `#users`), so that tests and tools can
/// state graphs as text.

#include <memory>
#include <string_view>

namespace qfx::ir {

class Graph;

/// Parses the IR text form into a new Graph, keeping node names. Raises
/// c10::Error naming the line and column of the first problem.
///
/// Example:
/// \code
///   auto g = parse_graph(R"(graph():
///       %x : [num_users=1] = placeholder[target=x]
///       %relu : [num_users=1] = call_function[target=torch.relu](args = (%x,), kwargs = {})
///       return relu)");
/// \endcode
std::unique_ptr<Graph> parse_graph(std::string_view text);

}  // namespace qfx::ir
