#pragma once
// The registration functions of ir's built-ins, one per file that defines
// them; ir::register_builtins() calls them in this order.

namespace qfx::ir {

void register_functional_ops();  // ops_functional.cpp: torch.nn.functional.*
void register_torch_ops();       // ops_torch.cpp: operator.*, torch.*
void register_tensor_methods();  // ops_methods.cpp: Tensor methods
void register_container_kind();  // graph_module.cpp: torch.nn.Module()

}  // namespace qfx::ir
