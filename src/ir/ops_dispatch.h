#pragma once
// Running LibTorch's registered operators (`torch.ops.quantized.linear`) as
// call_function targets.

#include "qfx/ir/op_registry.h"

#include <c10/util/Optional.h>

#include <string>

namespace qfx::ir {

/// True for `torch.ops.NS.NAME` targets.
bool is_torch_ops_target(const std::string& target);

/// An OpFn running the LibTorch operator `NS::NAME` named by
/// `torch.ops.NS.NAME`, choosing the overload its arguments bind to;
/// nullopt when LibTorch has no such operator.
c10::optional<OpFn> torch_ops_function(const std::string& target);

}  // namespace qfx::ir
