#pragma once
/// \file
/// The JSON form of a graph, for tools and reports:
/// `{"nodes": [{"name", "op", "target", "args", "kwargs"}]}`. Arguments map to
/// JSON as: None -> null, bool/int/float/str -> themselves, a node ->
/// `{"node": "name"}`, a list -> an array, a tuple -> `{"tuple": [...]}`,
/// a dtype/layout/memory format -> `{"dtype": "torch.float32"}` etc., a slice
/// -> `{"slice": [start, stop, step]}`, Ellipsis -> `{"ellipsis": true}`.

#include <nlohmann/json_fwd.hpp>

namespace qfx::ir {
class Graph;
class Argument;
}  // namespace qfx::ir

namespace qfx::io {

/// The JSON form of one argument.
nlohmann::json argument_to_json(const ir::Argument& arg);

/// The JSON form of a graph.
nlohmann::json graph_to_json(const ir::Graph& graph);

}  // namespace qfx::io
