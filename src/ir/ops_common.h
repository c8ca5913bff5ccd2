#pragma once
// Python semantics shared by several op rows: binary arithmetic on tensors and
// Python numbers (operator.add, torch.add, Tensor.add, ...) and indexing.

#include "qfx/ir/op_registry.h"

namespace qfx::ir {

/// The Python binary operators the interpreter evaluates.
enum class BinaryOp { kAdd, kSub, kMul, kTrueDiv, kFloorDiv, kMod, kPow, kMatMul };

/// The Python comparison operators.
enum class CompareOp { kGt, kLt, kGe, kLe, kEq, kNe };

/// `lhs <op> rhs` with Python's rules: tensors broadcast, `scalar - tensor`
/// uses the reflected operator, int op int stays int (except true division).
c10::IValue binary(BinaryOp op, const c10::IValue& lhs, const c10::IValue& rhs);

/// `lhs <op> rhs`: element-wise for tensors, a bool for numbers.
c10::IValue compare(CompareOp op, const c10::IValue& lhs, const c10::IValue& rhs);

/// `object[index]` for lists, tuples and tensors (ints, slices, None,
/// Ellipsis, tensors, or tuples of those).
c10::IValue getitem(const c10::IValue& object, const c10::IValue& index);
/// Python's `object[index] = value` on a tensor, in place; returns the
/// tensor (qfx's value of an in-place operator node, as its code reads
/// `setitem = x` after `x[index] = value`).
c10::IValue setitem(const c10::IValue& object, const c10::IValue& index, const c10::IValue& value);

/// A tuple of ints, as `Tensor.size()` returns (`torch.Size`).
c10::IValue int_tuple(c10::IntArrayRef values);

}  // namespace qfx::ir
