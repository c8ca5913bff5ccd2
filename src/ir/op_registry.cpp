// OpRegistry and CallArgs: argument access with Python's positional-or-keyword
// rules, and errors that name the missing or mistyped argument.

#include "qfx/ir/op_registry.h"

#include "ops_dispatch.h"

#include <ATen/core/jit_type.h>
#include <c10/util/Exception.h>

#include <algorithm>

namespace qfx::ir {
namespace {

// The items of a list or tuple argument, each checked with `is_item`.
std::vector<c10::IValue> items_of(const c10::IValue& v, const char* name, const char* what,
                                  bool (c10::IValue::*is_item)() const) {
  TORCH_CHECK(v.isList() || v.isTuple(), "argument '", name, "' must be a list of ", what, ", got ", v.tagKind());
  std::vector<c10::IValue> items = v.isList() ? v.toListRef().vec() : v.toTupleRef().elements().vec();
  for (const c10::IValue& item : items) {
    TORCH_CHECK((item.*is_item)(), "argument '", name, "' must be a list of ", what, ", got an item of type ",
                item.tagKind());
  }
  return items;
}

std::vector<int64_t> ints_of(const c10::IValue& v, const char* name) {
  if (v.isInt()) return {v.toInt()};
  if (v.isIntList()) return v.toIntVector();
  std::vector<int64_t> out;
  for (const c10::IValue& item : items_of(v, name, "ints", &c10::IValue::isInt)) out.push_back(item.toInt());
  return out;
}

c10::TupleTypePtr named_tuple_type(const char* name, std::vector<std::string> fields) {
  std::vector<c10::TypePtr> types(fields.size(), c10::OptionalType::create(c10::IntType::get()));
  return c10::TupleType::createNamed(c10::QualifiedName(name), fields, types);
}

const c10::TupleTypePtr& slice_type() {
  static const auto kType = named_tuple_type("slice", {"start", "stop", "step"});
  return kType;
}

const c10::TupleTypePtr& ellipsis_type() {
  static const auto kType = named_tuple_type("Ellipsis", {});
  return kType;
}

bool has_tuple_type(const c10::IValue& v, const c10::TupleTypePtr& type) {
  return v.isTuple() && v.toTupleRef().type() == type;
}

}  // namespace

const c10::IValue* CallArgs::find(size_t index, const char* name) const {
  const c10::IValue* found = nullptr;
  if (index < args_.size()) {
    found = &args_[index];
  } else {
    auto it = std::find_if(kwargs_.begin(), kwargs_.end(), [name](const auto& kv) { return kv.first == name; });
    if (it != kwargs_.end()) found = &it->second;
  }
  return found != nullptr && !found->isNone() ? found : nullptr;
}

const c10::IValue* CallArgs::keyword(const std::string& name) const {
  for (const auto& kv : kwargs_) {
    if (kv.first == name) return &kv.second;
  }
  return nullptr;
}

const c10::IValue& CallArgs::at(size_t index, const char* name) const {
  const c10::IValue* v = find(index, name);
  TORCH_CHECK(v != nullptr, "missing argument '", name, "' (position ", index, ")");
  return *v;
}

at::Tensor CallArgs::tensor(size_t index, const char* name) const {
  const c10::IValue& v = at(index, name);
  TORCH_CHECK(v.isTensor(), "argument '", name, "' must be a Tensor, got ", v.tagKind());
  return v.toTensor();
}

c10::optional<at::Tensor> CallArgs::optional_tensor(size_t index, const char* name) const {
  if (find(index, name) == nullptr) return c10::nullopt;
  return tensor(index, name);
}

int64_t CallArgs::to_int(size_t index, const char* name) const {
  const c10::IValue& v = at(index, name);
  TORCH_CHECK(v.isInt() || v.isBool(), "argument '", name, "' must be an int, got ", v.tagKind());
  return v.isInt() ? v.toInt() : static_cast<int64_t>(v.toBool());
}

int64_t CallArgs::int_or(size_t index, const char* name, int64_t fallback) const {
  return find(index, name) != nullptr ? to_int(index, name) : fallback;
}

double CallArgs::double_or(size_t index, const char* name, double fallback) const {
  const c10::IValue* v = find(index, name);
  if (v == nullptr) return fallback;
  TORCH_CHECK(v->isDouble() || v->isInt(), "argument '", name, "' must be a float, got ", v->tagKind());
  return v->isDouble() ? v->toDouble() : static_cast<double>(v->toInt());
}

bool CallArgs::bool_or(size_t index, const char* name, bool fallback) const {
  const c10::IValue* v = find(index, name);
  if (v == nullptr) return fallback;
  TORCH_CHECK(v->isBool() || v->isInt(), "argument '", name, "' must be a bool, got ", v->tagKind());
  return v->isBool() ? v->toBool() : v->toInt() != 0;
}

at::Scalar CallArgs::scalar(size_t index, const char* name) const {
  const c10::IValue& v = at(index, name);
  TORCH_CHECK(v.isScalar(), "argument '", name, "' must be a number, got ", v.tagKind());
  return v.toScalar();
}

std::vector<int64_t> CallArgs::int_list(size_t index, const char* name) const { return ints_of(at(index, name), name); }

std::vector<int64_t> CallArgs::int_list_or(size_t index, const char* name, std::vector<int64_t> fallback) const {
  const c10::IValue* v = find(index, name);
  return v != nullptr ? ints_of(*v, name) : fallback;
}

std::vector<int64_t> CallArgs::int_varargs(size_t first, const char* name) const {
  if (first + 1 == args_.size() && !args_[first].isInt()) return int_list(first, name);
  if (first >= args_.size()) return int_list(first, name);  // given by keyword
  std::vector<int64_t> out;
  for (size_t i = first; i < args_.size(); ++i) out.push_back(to_int(i, name));
  return out;
}

std::vector<at::Tensor> CallArgs::tensor_list(size_t index, const char* name) const {
  const c10::IValue& v = at(index, name);
  if (v.isTensorList()) return v.toTensorVector();
  std::vector<at::Tensor> out;
  for (const c10::IValue& item : items_of(v, name, "Tensors", &c10::IValue::isTensor)) {
    out.push_back(item.toTensor());
  }
  return out;
}

c10::optional<at::ScalarType> CallArgs::optional_dtype(size_t index, const char* name) const {
  const c10::IValue* v = find(index, name);
  if (v == nullptr) return c10::nullopt;
  TORCH_CHECK(v->isInt(), "argument '", name, "' must be a dtype, got ", v->tagKind());
  return static_cast<at::ScalarType>(v->toInt());
}

OpRegistry& OpRegistry::functions() {
  static OpRegistry registry;
  return registry;
}

OpRegistry& OpRegistry::methods() {
  static OpRegistry registry;
  return registry;
}

void OpRegistry::add(const std::vector<OpRow>& rows) {
  for (const OpRow& row : rows) {
    TORCH_CHECK(ops_.emplace(row.name, row.fn).second, "op ", row.name, " is registered twice");
  }
}

const OpFn* OpRegistry::find(const std::string& name) const {
  auto it = ops_.find(name);
  if (it != ops_.end()) return &it->second;
  if (this != &functions() || !is_torch_ops_target(name)) return nullptr;
  std::lock_guard<std::mutex> lock(torch_ops_mutex_);
  auto cached = torch_ops_.find(name);
  if (cached != torch_ops_.end()) return &cached->second;
  c10::optional<OpFn> fn = torch_ops_function(name);
  return fn ? &torch_ops_.emplace(name, std::move(*fn)).first->second : nullptr;
}

std::vector<std::string> OpRegistry::names() const {
  std::vector<std::string> names;
  for (const auto& kv : ops_) names.push_back(kv.first);
  std::sort(names.begin(), names.end());
  return names;
}

c10::IValue make_slice(c10::IValue start, c10::IValue stop, c10::IValue step) {
  return c10::ivalue::Tuple::createNamed({std::move(start), std::move(stop), std::move(step)}, slice_type());
}

bool is_slice(const c10::IValue& value) { return has_tuple_type(value, slice_type()); }

c10::IValue make_ellipsis() { return c10::ivalue::Tuple::createNamed({}, ellipsis_type()); }

bool is_ellipsis(const c10::IValue& value) { return has_tuple_type(value, ellipsis_type()); }

}  // namespace qfx::ir
