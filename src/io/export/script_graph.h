#pragma once
// The graph an export compiles: the GraphModule's graph rewritten into
// TorchScript's vocabulary.

#include "module_script.h"

#include "qfx/ir/graph_module.h"

#include <memory>

namespace qfx::io::detail {

/// A copy of `gm`'s graph as TorchScript reads it: functional calls as the
/// ATen ops they trace to, dtypes and layouts as their integer codes,
/// get_attr nodes naming attributes registered in `attrs`, `torch._assert`
/// as `_assert_async`, Python's integer powers as ints, pointwise
/// convolutions on onednn as linear (nn::pointwise_linear_weight), the clamp
/// family on qnnpack on the memory-order view (ir::clamp_in_memory_order).
std::unique_ptr<ir::Graph> script_graph(const ir::GraphModule& gm, ScriptAttrs& attrs);

}  // namespace qfx::io::detail
