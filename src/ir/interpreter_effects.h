#pragma once
// What a step of the interpreter may do to tensors it does not own: change
// them in place. Internal to src/ir (interpreter.cpp).

#include "qfx/ir/module_registry.h"
#include "qfx/ir/node.h"

namespace qfx::ir::detail {

/// Whether a call_function / call_method may change a tensor in place: an
/// in-place op (`relu_`, `operator.iadd`, `__iadd__`, `setitem`), `out=`, or
/// `inplace=True` (by keyword, or any True argument of a functional).
bool op_may_mutate(const Node& node);

/// Whether qfx knows what a module kind does: a PyTorch class, not a
/// TorchScript or user module run as it is.
bool known_kind(const ModuleKind& kind);

/// Whether a module may change its input in place: a class that takes
/// `inplace` (whatever its setting), or a kind qfx does not know.
bool module_may_mutate(const ModuleKind& kind);

}  // namespace qfx::ir::detail
