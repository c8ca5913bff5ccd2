// Python arithmetic and indexing semantics for the interpreter's op rows.

#include "ops_common.h"

#include <ATen/ATen.h>
#include <ATen/TensorIndexing.h>

#include <cmath>
#include <type_traits>

namespace qfx::ir {
namespace {

// `tensor <op> other`, where other is a Tensor or a Scalar.
template <typename Other>
at::Tensor tensor_op(BinaryOp op, const at::Tensor& a, const Other& b) {
  switch (op) {
    case BinaryOp::kAdd: return at::add(a, b);
    case BinaryOp::kSub: return at::sub(a, b);
    case BinaryOp::kMul: return at::mul(a, b);
    case BinaryOp::kTrueDiv: return at::div(a, b);
    case BinaryOp::kFloorDiv: return at::floor_divide(a, b);
    case BinaryOp::kMod: return at::remainder(a, b);
    case BinaryOp::kPow: return at::pow(a, b);
    case BinaryOp::kMatMul:
      if constexpr (std::is_same_v<Other, at::Tensor>) return at::matmul(a, b);
      break;
  }
  TORCH_CHECK(false, "matmul needs two tensors");
}

// The reflected operators of torch.Tensor: `scalar <op> tensor`.
at::Tensor scalar_tensor_op(BinaryOp op, const at::Scalar& a, const at::Tensor& b) {
  switch (op) {
    case BinaryOp::kAdd: return at::add(b, a);
    case BinaryOp::kSub: return at::rsub(b, a);
    case BinaryOp::kMul: return at::mul(b, a);
    case BinaryOp::kTrueDiv: return at::mul(at::reciprocal(b), a);
    case BinaryOp::kFloorDiv: return at::floor_divide(at::scalar_tensor(a, b.options()), b);
    case BinaryOp::kMod: return at::remainder(at::scalar_tensor(a, b.options()), b);
    case BinaryOp::kPow: return at::pow(a, b);
    case BinaryOp::kMatMul: break;
  }
  TORCH_CHECK(false, "matmul needs two tensors");
}

c10::IValue int_op(BinaryOp op, int64_t a, int64_t b) {
  switch (op) {
    case BinaryOp::kAdd: return a + b;
    case BinaryOp::kSub: return a - b;
    case BinaryOp::kMul: return a * b;
    case BinaryOp::kTrueDiv: return static_cast<double>(a) / static_cast<double>(b);
    case BinaryOp::kFloorDiv: {
      TORCH_CHECK(b != 0, "integer division by zero");
      int64_t q = a / b;
      return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
    }
    case BinaryOp::kMod: {
      TORCH_CHECK(b != 0, "integer division or modulo by zero");
      int64_t r = a % b;
      return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;  // Python's sign: the divisor's
    }
    case BinaryOp::kPow:
      if (b < 0) return std::pow(static_cast<double>(a), static_cast<double>(b));
      return static_cast<int64_t>(std::llround(std::pow(static_cast<double>(a), static_cast<double>(b))));
    case BinaryOp::kMatMul: break;
  }
  TORCH_CHECK(false, "matmul needs two tensors");
}

c10::IValue double_op(BinaryOp op, double a, double b) {
  switch (op) {
    case BinaryOp::kAdd: return a + b;
    case BinaryOp::kSub: return a - b;
    case BinaryOp::kMul: return a * b;
    case BinaryOp::kTrueDiv: return a / b;
    case BinaryOp::kFloorDiv: return std::floor(a / b);
    case BinaryOp::kMod: return a - b * std::floor(a / b);
    case BinaryOp::kPow: return std::pow(a, b);
    case BinaryOp::kMatMul: break;
  }
  TORCH_CHECK(false, "matmul needs two tensors");
}

at::indexing::TensorIndex tensor_index(const c10::IValue& v) {
  using namespace at::indexing;
  if (v.isNone()) return TensorIndex(None);
  if (v.isInt()) return TensorIndex(v.toInt());
  if (v.isBool()) return TensorIndex(v.toBool());
  if (v.isTensor()) return TensorIndex(v.toTensor());
  if (is_ellipsis(v)) return TensorIndex(Ellipsis);
  if (is_slice(v)) {
    const auto& e = v.toTupleRef().elements();
    auto part = [&e](size_t i) { return e[i].isNone() ? c10::optional<int64_t>() : e[i].toInt(); };
    return TensorIndex(Slice(part(0), part(1), part(2)));
  }
  TORCH_CHECK(false, "unsupported tensor index of type ", v.tagKind());
}

// x[index]: one index, or a tuple of them.
std::vector<at::indexing::TensorIndex> tensor_indices(const c10::IValue& index) {
  std::vector<at::indexing::TensorIndex> indices;
  if (index.isTuple() && !is_slice(index) && !is_ellipsis(index)) {
    for (const c10::IValue& part : index.toTupleRef().elements()) indices.push_back(tensor_index(part));
  } else {
    indices.push_back(tensor_index(index));
  }
  return indices;
}

}  // namespace

c10::IValue binary(BinaryOp op, const c10::IValue& lhs, const c10::IValue& rhs) {
  if (lhs.isTensor() && rhs.isTensor()) return tensor_op(op, lhs.toTensor(), rhs.toTensor());
  if (lhs.isTensor() && rhs.isScalar()) return tensor_op(op, lhs.toTensor(), rhs.toScalar());
  if (lhs.isScalar() && rhs.isTensor()) return scalar_tensor_op(op, lhs.toScalar(), rhs.toTensor());
  if (lhs.isInt() && rhs.isInt()) return int_op(op, lhs.toInt(), rhs.toInt());
  TORCH_CHECK(lhs.isScalar() && rhs.isScalar(), "unsupported operand types ", lhs.tagKind(), " and ", rhs.tagKind());
  return double_op(op, lhs.toScalar().toDouble(), rhs.toScalar().toDouble());
}

c10::IValue compare(CompareOp op, const c10::IValue& lhs, const c10::IValue& rhs) {
  if (lhs.isTensor()) {
    const at::Tensor& a = lhs.toTensor();
    at::Tensor b = rhs.isTensor() ? rhs.toTensor() : at::scalar_tensor(rhs.toScalar(), a.options());
    switch (op) {
      case CompareOp::kGt: return at::gt(a, b);
      case CompareOp::kLt: return at::lt(a, b);
      case CompareOp::kGe: return at::ge(a, b);
      case CompareOp::kLe: return at::le(a, b);
      case CompareOp::kEq: return at::eq(a, b);
      case CompareOp::kNe: return at::ne(a, b);
    }
  }
  TORCH_CHECK(lhs.isScalar() && rhs.isScalar(), "cannot compare ", lhs.tagKind(), " with ", rhs.tagKind());
  double a = lhs.toScalar().toDouble();
  double b = rhs.toScalar().toDouble();
  switch (op) {
    case CompareOp::kGt: return a > b;
    case CompareOp::kLt: return a < b;
    case CompareOp::kGe: return a >= b;
    case CompareOp::kLe: return a <= b;
    case CompareOp::kEq: return a == b;
    case CompareOp::kNe: return a != b;
  }
  return false;
}

c10::IValue getitem(const c10::IValue& object, const c10::IValue& index) {
  if (object.isList() || object.isTuple()) {
    auto items = object.isList() ? object.toListRef().vec() : object.toTupleRef().elements().vec();
    TORCH_CHECK(index.isInt(), "list and tuple indices must be integers, got ", index.tagKind());
    int64_t i = index.toInt();
    int64_t n = static_cast<int64_t>(items.size());
    TORCH_CHECK(i >= -n && i < n, "index ", i, " is out of range for a sequence of ", n);
    return items[i < 0 ? i + n : i];
  }
  TORCH_CHECK(object.isTensor(), "object of type ", object.tagKind(), " is not subscriptable");
  return object.toTensor().index(tensor_indices(index));
}

c10::IValue setitem(const c10::IValue& object, const c10::IValue& index, const c10::IValue& value) {
  TORCH_CHECK(object.isTensor(), "object of type ", object.tagKind(), " does not support item assignment");
  std::vector<at::indexing::TensorIndex> indices = tensor_indices(index);
  at::Tensor target = object.toTensor();
  if (value.isTensor()) {
    target.index_put_(indices, value.toTensor());
  } else {
    target.index_put_(indices, value.toScalar());
  }
  return target;
}

c10::IValue int_tuple(c10::IntArrayRef values) {
  std::vector<c10::IValue> items(values.begin(), values.end());
  return c10::ivalue::Tuple::create(std::move(items));
}

}  // namespace qfx::ir
