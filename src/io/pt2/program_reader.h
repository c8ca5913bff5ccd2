#pragma once
// The exported program of a PT2 archive as the FX-shaped graph
// torch.fx.symbolic_trace makes from the Python model: the nodes in a
// torch.nn leaf's scope (their nn_module_stack) become one call_module of
// that leaf, built from its state-dict tensors and its ATen ops' arguments;
// the other ATen nodes become FX nodes through the ATen -> FX table.
// Internal to src/io.

#include "archive.h"

#include "qfx/ir/graph_module.h"

namespace qfx::io::pt2 {

/// Builds `archive`'s program into the empty `gm`. c10::Error naming the
/// archive and the node for what qfx cannot read.
void read_program(const Archive& archive, ir::GraphModule& gm);

}  // namespace qfx::io::pt2
