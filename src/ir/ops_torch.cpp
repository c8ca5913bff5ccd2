// call_function rows for `torch.*` functions, Python's `operator` module and
// the `getattr` builtin, with the Python signatures' names and defaults.

#include "builtin_registrations.h"
#include "ops_common.h"

#include "qfx/ir/kernel_workarounds.h"

#include <ATen/ATen.h>

namespace qfx::ir {
namespace {

using A = const CallArgs&;

c10::IValue arithmetic(A a, BinaryOp op, const char* lhs, const char* rhs) {
  return binary(op, a.at(0, lhs), a.at(1, rhs));
}

c10::IValue add_like(A a, BinaryOp op) {
  const c10::IValue* alpha = a.find(2, "alpha");
  if (alpha == nullptr) return arithmetic(a, op, "input", "other");
  at::Tensor x = a.tensor(0, "input");
  const c10::IValue& other = a.at(1, "other");
  at::Tensor y = other.isTensor() ? other.toTensor() : at::scalar_tensor(other.toScalar(), x.options());
  return op == BinaryOp::kAdd ? at::add(x, y, alpha->toScalar()) : at::sub(x, y, alpha->toScalar());
}

c10::IValue reduce(A a, bool mean) {
  at::Tensor x = a.tensor(0, "input");
  auto dtype = a.optional_dtype(3, "dtype");
  if (a.find(1, "dim") == nullptr) return mean ? at::mean(x, dtype) : at::sum(x, dtype);
  auto dims = a.int_list(1, "dim");
  bool keep = a.bool_or(2, "keepdim", false);
  return mean ? at::mean(x, dims, keep, dtype) : at::sum(x, dims, keep, dtype);
}

c10::IValue tensor_sequence(std::vector<at::Tensor> parts) { return c10::List<at::Tensor>(parts); }

c10::IValue quantize_per_tensor(A a) {
  at::Tensor x = a.tensor(0, "input");
  const c10::IValue& scale = a.at(1, "scale");
  const c10::IValue& zero_point = a.at(2, "zero_point");
  auto dtype = *a.optional_dtype(3, "dtype");
  if (scale.isTensor()) return at::quantize_per_tensor(x, scale.toTensor(), zero_point.toTensor(), dtype);
  return at::quantize_per_tensor(x, scale.toDouble(), zero_point.toInt(), dtype);
}

c10::IValue quantize_per_channel(A a) {
  return at::quantize_per_channel(a.tensor(0, "input"), a.tensor(1, "scales"), a.tensor(2, "zero_points"),
                                  a.to_int(3, "axis"), *a.optional_dtype(4, "dtype"));
}

c10::IValue python_getattr(A a) {
  const c10::IValue& object = a.at(0, "object");
  const std::string& name = a.at(1, "name").toStringRef();
  TORCH_CHECK(object.isTensor(), "getattr: only Tensor attributes are supported, got ", object.tagKind());
  const at::Tensor& t = object.toTensor();
  if (name == "shape") return int_tuple(t.sizes());
  if (name == "ndim") return t.dim();
  if (name == "dtype") return static_cast<int64_t>(t.scalar_type());
  TORCH_CHECK(false, "getattr: unsupported Tensor attribute '", name, "'");
}

}  // namespace

void register_torch_ops() {
  OpRegistry::functions().add({
      {"operator.add", [](A a) { return arithmetic(a, BinaryOp::kAdd, "a", "b"); }},
      {"operator.sub", [](A a) { return arithmetic(a, BinaryOp::kSub, "a", "b"); }},
      {"operator.mul", [](A a) { return arithmetic(a, BinaryOp::kMul, "a", "b"); }},
      {"operator.truediv", [](A a) { return arithmetic(a, BinaryOp::kTrueDiv, "a", "b"); }},
      {"operator.floordiv", [](A a) { return arithmetic(a, BinaryOp::kFloorDiv, "a", "b"); }},
      {"operator.mod", [](A a) { return arithmetic(a, BinaryOp::kMod, "a", "b"); }},
      {"operator.pow", [](A a) { return arithmetic(a, BinaryOp::kPow, "a", "b"); }},
      {"operator.matmul", [](A a) { return arithmetic(a, BinaryOp::kMatMul, "a", "b"); }},
      {"operator.neg",
       [](A a) -> c10::IValue {
         const c10::IValue& x = a.at(0, "a");
         if (x.isTensor()) return at::neg(x.toTensor());
         return x.isInt() ? c10::IValue(-x.toInt()) : c10::IValue(-x.toDouble());
       }},
      {"operator.gt", [](A a) { return compare(CompareOp::kGt, a.at(0, "a"), a.at(1, "b")); }},
      {"operator.lt", [](A a) { return compare(CompareOp::kLt, a.at(0, "a"), a.at(1, "b")); }},
      {"operator.ge", [](A a) { return compare(CompareOp::kGe, a.at(0, "a"), a.at(1, "b")); }},
      {"operator.le", [](A a) { return compare(CompareOp::kLe, a.at(0, "a"), a.at(1, "b")); }},
      {"operator.eq", [](A a) { return compare(CompareOp::kEq, a.at(0, "a"), a.at(1, "b")); }},
      {"operator.ne", [](A a) { return compare(CompareOp::kNe, a.at(0, "a"), a.at(1, "b")); }},
      {"operator.getitem", [](A a) { return getitem(a.at(0, "a"), a.values().at(1)); }},
      {"operator.setitem", [](A a) { return setitem(a.at(0, "a"), a.values().at(1), a.values().at(2)); }},
      {"getattr", python_getattr},
      {"torch.add", [](A a) { return add_like(a, BinaryOp::kAdd); }},
      {"torch.sub", [](A a) { return add_like(a, BinaryOp::kSub); }},
      {"torch.mul", [](A a) { return arithmetic(a, BinaryOp::kMul, "input", "other"); }},
      {"torch.div",
       [](A a) -> c10::IValue {
         const c10::IValue* mode = a.find(2, "rounding_mode");
         if (mode == nullptr) return arithmetic(a, BinaryOp::kTrueDiv, "input", "other");
         return at::div(a.tensor(0, "input"), a.tensor(1, "other"), mode->toStringRef());
       }},
      {"torch.matmul", [](A a) -> c10::IValue { return at::matmul(a.tensor(0, "input"), a.tensor(1, "other")); }},
      {"torch.bmm", [](A a) -> c10::IValue { return at::bmm(a.tensor(0, "input"), a.tensor(1, "mat2")); }},
      {"torch.mm", [](A a) -> c10::IValue { return at::mm(a.tensor(0, "input"), a.tensor(1, "mat2")); }},
      {"torch.cat", [](A a) -> c10::IValue { return at::cat(a.tensor_list(0, "tensors"), a.int_or(1, "dim", 0)); }},
      {"torch.concat", [](A a) -> c10::IValue { return at::cat(a.tensor_list(0, "tensors"), a.int_or(1, "dim", 0)); }},
      {"torch.stack", [](A a) -> c10::IValue { return at::stack(a.tensor_list(0, "tensors"), a.int_or(1, "dim", 0)); }},
      {"torch.roll",
       [](A a) -> c10::IValue {
         return at::roll(a.tensor(0, "input"), a.int_list(1, "shifts"), a.int_list_or(2, "dims", {}));
       }},
      {"torch.flatten",
       [](A a) -> c10::IValue {
         return at::flatten(a.tensor(0, "input"), a.int_or(1, "start_dim", 0), a.int_or(2, "end_dim", -1));
       }},
      {"torch.reshape", [](A a) -> c10::IValue { return at::reshape(a.tensor(0, "input"), a.int_list(1, "shape")); }},
      {"torch.transpose",
       [](A a) -> c10::IValue {
         return at::transpose(a.tensor(0, "input"), a.to_int(1, "dim0"), a.to_int(2, "dim1"));
       }},
      {"torch.permute", [](A a) -> c10::IValue { return at::permute(a.tensor(0, "input"), a.int_list(1, "dims")); }},
      {"torch.unsqueeze", [](A a) -> c10::IValue { return at::unsqueeze(a.tensor(0, "input"), a.to_int(1, "dim")); }},
      {"torch.squeeze",
       [](A a) -> c10::IValue {
         at::Tensor x = a.tensor(0, "input");
         return a.find(1, "dim") ? at::squeeze(x, a.to_int(1, "dim")) : at::squeeze(x);
       }},
      {"torch.chunk",
       [](A a) -> c10::IValue {
         return tensor_sequence(at::chunk(a.tensor(0, "input"), a.to_int(1, "chunks"), a.int_or(2, "dim", 0)));
       }},
      {"torch.rsub",
       [](A a) -> c10::IValue {
         const c10::IValue& other = a.at(1, "other");
         at::Tensor x = a.tensor(0, "input");
         at::Scalar alpha = a.find(2, "alpha") ? a.scalar(2, "alpha") : at::Scalar(1);
         return other.isTensor() ? at::rsub(x, other.toTensor(), alpha) : at::rsub(x, other.toScalar(), alpha);
       }},
      {"torch.relu", [](A a) -> c10::IValue { return at::relu(a.tensor(0, "input")); }},
      {"torch.relu_",
       [](A a) -> c10::IValue {
         at::Tensor x = a.tensor(0, "input");
         return at::relu_(x);
       }},
      {"torch.sigmoid", [](A a) -> c10::IValue { return at::sigmoid(a.tensor(0, "input")); }},
      {"torch.tanh", [](A a) -> c10::IValue { return at::tanh(a.tensor(0, "input")); }},
      {"torch.exp", [](A a) -> c10::IValue { return at::exp(a.tensor(0, "input")); }},
      {"torch.sqrt", [](A a) -> c10::IValue { return at::sqrt(a.tensor(0, "input")); }},
      {"torch.clamp",
       [](A a) -> c10::IValue {
         const c10::IValue* lo = a.find(1, "min");
         const c10::IValue* hi = a.find(2, "max");
         return clamp_in_memory_order(a.tensor(0, "input"), [&](const at::Tensor& x) {
           return at::clamp(x, lo ? c10::optional<at::Scalar>(lo->toScalar()) : c10::nullopt,
                            hi ? c10::optional<at::Scalar>(hi->toScalar()) : c10::nullopt);
         });
       }},
      {"torch.mean", [](A a) { return reduce(a, true); }},
      {"torch.sum", [](A a) { return reduce(a, false); }},
      {"torch.quantize_per_tensor", quantize_per_tensor},
      {"torch.quantize_per_channel", quantize_per_channel},
      {"torch.quantize_per_tensor_dynamic",
       [](A a) -> c10::IValue {
         return at::quantize_per_tensor_dynamic(a.tensor(0, "input"), *a.optional_dtype(1, "dtype"),
                                                a.bool_or(2, "reduce_range", false));
       }},
      {"torch.dequantize", [](A a) -> c10::IValue { return at::dequantize(a.tensor(0, "input")); }},
      {"torch._assert",
       [](A a) -> c10::IValue {
         const c10::IValue& condition = a.at(0, "condition");
         bool holds = condition.isTensor() ? condition.toTensor().item<bool>() : condition.toBool();
         TORCH_CHECK(holds, "AssertionError: ", a.at(1, "message").toStringRef());
         return c10::IValue();
       }},
  });
}

}  // namespace qfx::ir
