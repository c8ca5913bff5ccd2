#pragma once
// The reference model as an oracle for lowered kernels (accuracy/kernel_gaps.h),
// with what this CPU's kernels cannot do: onednn's int8 convolutions and
// linears saturate without VNNI (ir::onednn_saturates).

#include "qfx/ir/graph_module.h"

#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

namespace qfx::test {

/// Whether the current engine's int8 convolutions and linears saturate on
/// this CPU (onednn without VNNI).
bool engine_saturates();

/// Expects every op of `lowered` within one quantization step of its
/// reference on `inputs` (one batch), but, where engine_saturates(),
/// its convolutions and linears.
void expect_kernel_gaps_within_rounding(const ir::GraphModule& reference, const ir::GraphModule& lowered,
                                        const std::vector<c10::IValue>& inputs, const std::string& where);

}  // namespace qfx::test
