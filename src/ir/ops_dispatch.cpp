// call_function targets `torch.ops.NS.NAME` (`torch.ops.quantized.linear`):
// any operator LibTorch registers, run through its JIT schema. The overload
// is chosen as Python's torch.ops does: the first schema the arguments bind
// to, positional then keyword, with the schema's defaults for the rest.

#include "ops_dispatch.h"

#include <torch/csrc/jit/runtime/operator.h>

#include <c10/util/Exception.h>

#include <cstring>

namespace qfx::ir {
namespace {

constexpr const char* kPrefix = "torch.ops.";

/// A one-element tensor, which Python's torch.ops accepts for a number
/// (a quantize node's scale attribute).
bool is_number_tensor(const c10::IValue& value) {
  return value.isTensor() && value.toTensor().numel() == 1 && !value.toTensor().is_quantized();
}

/// `value` as schema type `type` wants it, or nullopt if it does not fit.
/// Python numbers widen (int -> float), tuples of ints are int lists.
c10::optional<c10::IValue> coerce(const c10::IValue& value, const c10::TypePtr& type) {
  if (value.isNone()) {
    if (type->kind() == c10::TypeKind::OptionalType) return value;
    return c10::nullopt;
  }
  c10::TypePtr want =
      type->kind() == c10::TypeKind::OptionalType ? type->expectRef<c10::OptionalType>().getElementType() : type;
  switch (want->kind()) {
    case c10::TypeKind::FloatType:
      if (value.isDouble()) return value;
      if (value.isInt()) return c10::IValue(static_cast<double>(value.toInt()));
      if (is_number_tensor(value)) return c10::IValue(value.toTensor().item<double>());
      return c10::nullopt;
    case c10::TypeKind::IntType:
      if (is_number_tensor(value) && !value.toTensor().is_floating_point()) {
        return c10::IValue(value.toTensor().item<int64_t>());
      }
      return value.isInt() ? c10::optional<c10::IValue>(value) : c10::nullopt;
    case c10::TypeKind::BoolType: return value.isBool() ? c10::optional<c10::IValue>(value) : c10::nullopt;
    case c10::TypeKind::NumberType: return value.isScalar() ? c10::optional<c10::IValue>(value) : c10::nullopt;
    case c10::TypeKind::TensorType: return value.isTensor() ? c10::optional<c10::IValue>(value) : c10::nullopt;
    case c10::TypeKind::ListType: {
      c10::TypePtr item = want->expectRef<c10::ListType>().getElementType();
      if (item->kind() == c10::TypeKind::IntType) {
        if (value.isInt()) return c10::IValue(std::vector<int64_t>{value.toInt()});
        if (value.isIntList()) return value;
        if (!value.isTuple() && !value.isList()) return c10::nullopt;
        std::vector<int64_t> ints;
        auto items = value.isTuple() ? value.toTupleRef().elements().vec() : value.toListRef().vec();
        for (const c10::IValue& i : items) {
          if (!i.isInt()) return c10::nullopt;
          ints.push_back(i.toInt());
        }
        return c10::IValue(ints);
      }
      if (item->kind() == c10::TypeKind::TensorType) {
        if (value.isTensorList()) return value;
        if (!value.isTuple() && !value.isList()) return c10::nullopt;
        std::vector<at::Tensor> tensors;
        auto items = value.isTuple() ? value.toTupleRef().elements().vec() : value.toListRef().vec();
        for (const c10::IValue& i : items) {
          if (!i.isTensor()) return c10::nullopt;
          tensors.push_back(i.toTensor());
        }
        return c10::IValue(tensors);
      }
      return value.type()->isSubtypeOf(*want) ? c10::optional<c10::IValue>(value) : c10::nullopt;
    }
    case c10::TypeKind::DeviceObjType:  // FX writes devices as strings ('cpu')
      if (value.isString()) return c10::IValue(c10::Device(value.toStringRef()));
      return value.isDevice() ? c10::optional<c10::IValue>(value) : c10::nullopt;
    case c10::TypeKind::ScalarTypeType:
    case c10::TypeKind::LayoutType:
    case c10::TypeKind::MemoryFormatType: return value.isInt() ? c10::optional<c10::IValue>(value) : c10::nullopt;
    default: return value.type()->isSubtypeOf(*want) ? c10::optional<c10::IValue>(value) : c10::nullopt;
  }
}

/// The stack for `schema` from `args`, or nullopt if they do not bind.
c10::optional<torch::jit::Stack> bind(const c10::FunctionSchema& schema, const CallArgs& args) {
  const auto& formals = schema.arguments();
  if (args.size() > formals.size()) return c10::nullopt;
  size_t used_kwargs = 0;
  torch::jit::Stack stack;
  for (size_t i = 0; i < formals.size(); ++i) {
    const c10::Argument& formal = formals[i];
    if (formal.alias_info() != nullptr && formal.alias_info()->isWrite()) return c10::nullopt;  // out= overloads
    const c10::IValue* given = nullptr;
    if (i < args.size()) {
      given = &args.values()[i];
    } else if ((given = args.keyword(formal.name())) != nullptr) {
      ++used_kwargs;
    }
    if (given == nullptr) {
      if (!formal.default_value()) return c10::nullopt;
      stack.push_back(*formal.default_value());
      continue;
    }
    c10::optional<c10::IValue> value = coerce(*given, formal.type());
    if (!value) return c10::nullopt;
    stack.push_back(std::move(*value));
  }
  if (used_kwargs != args.keywords().size()) return c10::nullopt;
  return stack;
}

std::string describe(const CallArgs& args) {
  std::string out;
  for (const c10::IValue& v : args.values()) out += std::string(out.empty() ? "" : ", ") + v.tagKind();
  for (const auto& [name, v] : args.keywords()) out += std::string(out.empty() ? "" : ", ") + name + "=" + v.tagKind();
  return out;
}

}  // namespace

bool is_torch_ops_target(const std::string& target) { return target.rfind(kPrefix, 0) == 0; }

c10::optional<OpFn> torch_ops_function(const std::string& target) {
  if (!is_torch_ops_target(target)) return c10::nullopt;
  std::string rest = target.substr(std::strlen(kPrefix));
  size_t dot = rest.find('.');
  if (dot == std::string::npos) return c10::nullopt;
  c10::Symbol symbol = c10::Symbol::fromQualString(rest.substr(0, dot) + "::" + rest.substr(dot + 1));
  std::vector<std::shared_ptr<torch::jit::Operator>> operators = torch::jit::getAllOperatorsFor(symbol);
  if (operators.empty()) return c10::nullopt;
  return OpFn([operators, target](const CallArgs& args) -> c10::IValue {
    for (const auto& op : operators) {
      c10::optional<torch::jit::Stack> stack = bind(op->schema(), args);
      if (!stack) continue;
      op->getOperation()(*stack);
      if (stack->size() == 1) return stack->front();
      return c10::ivalue::Tuple::create(std::move(*stack));
    }
    TORCH_CHECK(false, target, ": no overload takes (", describe(args), ")");
  });
}

}  // namespace qfx::ir
