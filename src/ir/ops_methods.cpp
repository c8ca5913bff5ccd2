// call_method rows: Tensor methods by name. args[0] is the tensor (`self`);
// the rest follow the Python method's signature.

#include "builtin_registrations.h"
#include "ops_common.h"

#include "qfx/ir/kernel_workarounds.h"

#include <ATen/ATen.h>

namespace qfx::ir {
namespace {

using A = const CallArgs&;

at::Tensor self(A a) { return a.tensor(0, "self"); }

c10::IValue size(A a) {
  at::Tensor x = self(a);
  if (a.find(1, "dim") != nullptr) return x.size(a.to_int(1, "dim"));
  return int_tuple(x.sizes());
}

c10::IValue method_reduce(A a, bool mean) {
  at::Tensor x = self(a);
  auto dtype = a.optional_dtype(3, "dtype");
  if (a.find(1, "dim") == nullptr) return mean ? x.mean(dtype) : x.sum(dtype);
  auto dims = a.int_list(1, "dim");
  bool keep = a.bool_or(2, "keepdim", false);
  return mean ? x.mean(dims, keep, dtype) : x.sum(dims, keep, dtype);
}

// Tensor.to(dtype) / to(device) / to(other) / to(device, dtype).
c10::IValue to(A a) {
  at::Tensor x = self(a);
  const c10::IValue* first = a.find(1, "dtype");
  if (first == nullptr) return x;
  if (first->isTensor()) return x.to(first->toTensor());
  if (first->isInt()) return x.to(static_cast<at::ScalarType>(first->toInt()));
  if (first->isString() || first->isDevice()) {
    at::Device device = first->isString() ? at::Device(first->toStringRef()) : first->toDevice();
    auto dtype = a.optional_dtype(2, "dtype");
    return dtype ? x.to(device, *dtype) : x.to(device);
  }
  TORCH_CHECK(false, "Tensor.to: unsupported argument of type ", first->tagKind());
}

c10::IValue arith(A a, BinaryOp op) { return binary(op, a.at(0, "self"), a.at(1, "other")); }

c10::IValue arith_inplace(A a, BinaryOp op) {
  at::Tensor x = self(a);
  const c10::IValue& other = a.at(1, "other");
  at::Tensor y = other.isTensor() ? other.toTensor() : at::scalar_tensor(other.toScalar(), x.options());
  switch (op) {
    case BinaryOp::kAdd: return x.add_(y);
    case BinaryOp::kSub: return x.sub_(y);
    case BinaryOp::kMul: return x.mul_(y);
    default: return x.div_(y);
  }
}

c10::IValue sequence(std::vector<at::Tensor> parts) { return c10::List<at::Tensor>(parts); }

}  // namespace

void register_tensor_methods() {
  OpRegistry::methods().add({
      {"size", size},
      {"dim", [](A a) -> c10::IValue { return self(a).dim(); }},
      {"numel", [](A a) -> c10::IValue { return self(a).numel(); }},
      {"view", [](A a) -> c10::IValue { return self(a).view(a.int_varargs(1, "size")); }},
      {"reshape", [](A a) -> c10::IValue { return self(a).reshape(a.int_varargs(1, "shape")); }},
      {"flatten",
       [](A a) -> c10::IValue { return self(a).flatten(a.int_or(1, "start_dim", 0), a.int_or(2, "end_dim", -1)); }},
      {"permute", [](A a) -> c10::IValue { return self(a).permute(a.int_varargs(1, "dims")); }},
      {"transpose", [](A a) -> c10::IValue { return self(a).transpose(a.to_int(1, "dim0"), a.to_int(2, "dim1")); }},
      {"t", [](A a) -> c10::IValue { return self(a).t(); }},
      {"unsqueeze", [](A a) -> c10::IValue { return self(a).unsqueeze(a.to_int(1, "dim")); }},
      {"squeeze",
       [](A a) -> c10::IValue { return a.find(1, "dim") ? self(a).squeeze(a.to_int(1, "dim")) : self(a).squeeze(); }},
      {"expand", [](A a) -> c10::IValue { return self(a).expand(a.int_varargs(1, "size")); }},
      {"new_zeros", [](A a) -> c10::IValue { return self(a).new_zeros(a.int_varargs(1, "size")); }},
      {"repeat", [](A a) -> c10::IValue { return self(a).repeat(a.int_varargs(1, "repeats")); }},
      {"contiguous",
       [](A a) -> c10::IValue {
         const c10::IValue* format = a.find(1, "memory_format");
         return self(a).contiguous(format ? static_cast<at::MemoryFormat>(format->toInt())
                                          : at::MemoryFormat::Contiguous);
       }},
      {"chunk",
       [](A a) -> c10::IValue { return sequence(self(a).chunk(a.to_int(1, "chunks"), a.int_or(2, "dim", 0))); }},
      {"mean", [](A a) { return method_reduce(a, true); }},
      {"sum", [](A a) { return method_reduce(a, false); }},
      {"relu", [](A a) -> c10::IValue { return self(a).relu(); }},
      {"relu_", [](A a) -> c10::IValue { return self(a).relu_(); }},
      {"sigmoid", [](A a) -> c10::IValue { return self(a).sigmoid(); }},
      {"sigmoid_", [](A a) -> c10::IValue { return self(a).sigmoid_(); }},
      {"tanh", [](A a) -> c10::IValue { return self(a).tanh(); }},
      {"softmax", [](A a) -> c10::IValue { return self(a).softmax(a.to_int(1, "dim"), a.optional_dtype(2, "dtype")); }},
      {"clamp",
       [](A a) -> c10::IValue {
         const c10::IValue* lo = a.find(1, "min");
         const c10::IValue* hi = a.find(2, "max");
         return clamp_in_memory_order(self(a), [&](const at::Tensor& x) {
           return x.clamp(lo ? c10::optional<at::Scalar>(lo->toScalar()) : c10::nullopt,
                          hi ? c10::optional<at::Scalar>(hi->toScalar()) : c10::nullopt);
         });
       }},
      {"add", [](A a) { return arith(a, BinaryOp::kAdd); }},
      {"sub", [](A a) { return arith(a, BinaryOp::kSub); }},
      {"mul", [](A a) { return arith(a, BinaryOp::kMul); }},
      {"div", [](A a) { return arith(a, BinaryOp::kTrueDiv); }},
      {"matmul", [](A a) { return arith(a, BinaryOp::kMatMul); }},
      {"add_", [](A a) { return arith_inplace(a, BinaryOp::kAdd); }},
      {"sub_", [](A a) { return arith_inplace(a, BinaryOp::kSub); }},
      {"mul_", [](A a) { return arith_inplace(a, BinaryOp::kMul); }},
      {"div_", [](A a) { return arith_inplace(a, BinaryOp::kTrueDiv); }},
      {"dequantize", [](A a) -> c10::IValue { return self(a).dequantize(); }},
      {"to", to},
      {"float", [](A a) -> c10::IValue { return self(a).to(at::kFloat); }},
      {"half", [](A a) -> c10::IValue { return self(a).to(at::kHalf); }},
      {"detach", [](A a) -> c10::IValue { return self(a).detach(); }},
      {"masked_fill",
       [](A a) -> c10::IValue {
         const c10::IValue& value = a.at(2, "value");
         at::Tensor mask = a.tensor(1, "mask");
         return value.isTensor() ? self(a).masked_fill(mask, value.toTensor())
                                 : self(a).masked_fill(mask, value.toScalar());
       }},
      {"narrow",
       [](A a) -> c10::IValue {
         return self(a).narrow(a.to_int(1, "dim"), a.to_int(2, "start"), a.to_int(3, "length"));
       }},
      {"repeat_interleave",
       [](A a) -> c10::IValue {
         const c10::IValue& repeats = a.at(1, "repeats");
         c10::optional<int64_t> dim = a.find(2, "dim") ? c10::optional<int64_t>(a.to_int(2, "dim")) : c10::nullopt;
         return repeats.isTensor() ? self(a).repeat_interleave(repeats.toTensor(), dim)
                                   : self(a).repeat_interleave(repeats.toInt(), dim);
       }},
      {"clone", [](A a) -> c10::IValue { return self(a).clone(); }},
      {"type_as", [](A a) -> c10::IValue { return self(a).type_as(a.tensor(1, "other")); }},
  });
}

}  // namespace qfx::ir
