#pragma once
// The graph edits around dequantize nodes that convert and lowering share,
// each named after the PyTorch 1.13 helper it mirrors. Internal to the passes.

#include "qfx/ir/graph.h"

namespace qfx::passes::detail {

/// Whether `arg` is a dequantize node (`call_method dequantize`).
bool is_dequantize(const ir::Argument& arg);

/// A dequantize node after `node`, read by all of `node`'s users instead
/// (PyTorch's _insert_dequantize_node).
ir::Node* insert_dequantize_after(ir::Graph& graph, ir::Node& node);

/// `node` (an observer or DeQuantStub whose input is quantized already)
/// becomes `dequantize` of its input (PyTorch's
/// _replace_observer_or_dequant_stub_with_dequantize_node).
ir::Node* replace_with_dequantize(ir::Graph& graph, ir::Node& node);

/// The dequantize nodes among `arg` (items of a list or tuple too): `user`
/// reads the quantized values they came from instead, and a dequantize left
/// without users goes (PyTorch's _maybe_recursive_remove_dequantize).
void bypass_dequantize(ir::Graph& graph, ir::Node& user, const ir::Argument& arg);

}  // namespace qfx::passes::detail
