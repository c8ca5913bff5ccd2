// dce: dead-code elimination, FX's eliminate_dead_code as a pass.

#include "qfx/ir/graph_module.h"
#include "qfx/passes/pass.h"

namespace qfx::passes {

bool dce(ir::GraphModule& gm) { return gm.graph().eliminate_dead_code(); }

}  // namespace qfx::passes
