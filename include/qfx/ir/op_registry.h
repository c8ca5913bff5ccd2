#pragma once
/// \file
/// OpRegistry: what the interpreter runs for a `call_function` target
/// (`torch.add`, `operator.add`, `torch.nn.functional.relu`) or a
/// `call_method` name (`view`, `dequantize`). Each op is a row
/// `{name, fn}`; `fn` reads its arguments through CallArgs by position or
/// keyword, with Python's defaults.

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace qfx::ir {

/// The arguments of one call: positional values and keyword values.
class CallArgs {
 public:
  using KwargValues = std::vector<std::pair<std::string, c10::IValue>>;
  CallArgs(std::vector<c10::IValue> args, KwargValues kwargs) : args_(std::move(args)), kwargs_(std::move(kwargs)) {}

  /// Number of positional arguments.
  size_t size() const { return args_.size(); }
  /// Argument `index` if given positionally, else keyword `name`, else nullptr.
  /// A None value counts as absent.
  const c10::IValue* find(size_t index, const char* name) const;
  /// As find, but raises c10::Error naming the missing argument.
  const c10::IValue& at(size_t index, const char* name) const;

  at::Tensor tensor(size_t index, const char* name) const;
  c10::optional<at::Tensor> optional_tensor(size_t index, const char* name) const;
  int64_t to_int(size_t index, const char* name) const;
  int64_t int_or(size_t index, const char* name, int64_t fallback) const;
  double double_or(size_t index, const char* name, double fallback) const;
  bool bool_or(size_t index, const char* name, bool fallback) const;
  at::Scalar scalar(size_t index, const char* name) const;
  /// An int list; a single int `n` becomes `[n]`.
  std::vector<int64_t> int_list(size_t index, const char* name) const;
  std::vector<int64_t> int_list_or(size_t index, const char* name, std::vector<int64_t> fallback) const;
  /// Python varargs of ints (`x.view(2, 3)`) or one list (`x.view([2, 3])`),
  /// starting at `first`.
  std::vector<int64_t> int_varargs(size_t first, const char* name) const;
  std::vector<at::Tensor> tensor_list(size_t index, const char* name) const;
  c10::optional<at::ScalarType> optional_dtype(size_t index, const char* name) const;

  /// Positional values, for ops that take anything (operator.getitem).
  const std::vector<c10::IValue>& values() const { return args_; }
  /// Keyword values, in call order.
  const KwargValues& keywords() const { return kwargs_; }
  /// Keyword `name` (None included), or nullptr.
  const c10::IValue* keyword(const std::string& name) const;

 private:
  std::vector<c10::IValue> args_;
  KwargValues kwargs_;
};

/// Runs an op on its arguments.
using OpFn = std::function<c10::IValue(const CallArgs&)>;

/// One registry row.
struct OpRow {
  const char* name;
  OpFn fn;
};

/// A table of ops by name. Two instances: `functions()` for call_function
/// targets, `methods()` for call_method names.
class OpRegistry {
 public:
  static OpRegistry& functions();
  static OpRegistry& methods();

  /// Adds rows; raises c10::Error on a name already present.
  void add(const std::vector<OpRow>& rows);
  /// The op for `name`, or nullptr. In functions(), a `torch.ops.NS.NAME`
  /// target not added explicitly runs LibTorch's operator `NS::NAME`.
  const OpFn* find(const std::string& name) const;
  /// All names, sorted.
  std::vector<std::string> names() const;

 private:
  std::unordered_map<std::string, OpFn> ops_;
  mutable std::unordered_map<std::string, OpFn> torch_ops_;  // resolved on first use
  mutable std::mutex torch_ops_mutex_;
};

/// IValue for a Python slice (start, stop, step: None or int), and its test.
c10::IValue make_slice(c10::IValue start, c10::IValue stop, c10::IValue step);
bool is_slice(const c10::IValue& value);
/// IValue for Python's Ellipsis, and its test.
c10::IValue make_ellipsis();
bool is_ellipsis(const c10::IValue& value);

}  // namespace qfx::ir
