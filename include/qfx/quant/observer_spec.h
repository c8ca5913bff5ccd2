#pragma once
/// \file
/// ObserverSpec: an observer or fake-quantize class with constructor
/// arguments — PyTorch's `MinMaxObserver.with_args(dtype=torch.qint8)` — from
/// which fresh instances are made. Classes are named by their PyTorch
/// qualified names (`torch.ao.quantization.observer.MinMaxObserver`; the last
/// part alone is accepted too).

#include "qfx/quant/observer_base.h"

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace qfx::quant {

class ObserverSpec;

/// One argument value: None, bool, int, float, str, dtype, qscheme, or
/// another spec (FakeQuantize's `observer`). Numbers compare by value, as in
/// Python (`1 == 1.0`).
class SpecValue {
 public:
  SpecValue() = default;
  SpecValue(bool v);                 // NOLINT: implicit, like Python values
  SpecValue(int v);                  // NOLINT
  SpecValue(int64_t v);              // NOLINT
  SpecValue(double v);               // NOLINT
  SpecValue(const char* v);          // NOLINT
  SpecValue(std::string v);          // NOLINT
  SpecValue(c10::ScalarType v);      // NOLINT
  SpecValue(c10::QScheme v);         // NOLINT
  SpecValue(const ObserverSpec& v);  // NOLINT

  bool is_none() const { return std::holds_alternative<std::monostate>(value_); }
  bool is_bool() const { return std::holds_alternative<bool>(value_); }
  bool is_int() const { return std::holds_alternative<int64_t>(value_); }
  bool is_double() const { return std::holds_alternative<double>(value_); }
  bool is_string() const { return std::holds_alternative<std::string>(value_); }
  bool is_dtype() const { return std::holds_alternative<c10::ScalarType>(value_); }
  bool is_qscheme() const { return std::holds_alternative<c10::QScheme>(value_); }
  bool is_spec() const { return std::holds_alternative<std::shared_ptr<const ObserverSpec>>(value_); }

  bool to_bool() const { return std::get<bool>(value_); }
  int64_t to_int() const { return std::get<int64_t>(value_); }
  /// A float, or an int widened.
  double to_double() const;
  const std::string& to_string() const { return std::get<std::string>(value_); }
  c10::ScalarType to_dtype() const { return std::get<c10::ScalarType>(value_); }
  c10::QScheme to_qscheme() const { return std::get<c10::QScheme>(value_); }
  const ObserverSpec& to_spec() const { return *std::get<std::shared_ptr<const ObserverSpec>>(value_); }

  /// Python spelling: `None`, `True`, `0.1`, `'name'`, `torch.qint8`, ...
  std::string repr() const;
  /// The kind, for messages: "bool", "int", "dtype", ...
  const char* kind() const;

  bool operator==(const SpecValue& other) const;
  bool operator!=(const SpecValue& other) const { return !(*this == other); }

 private:
  std::variant<std::monostate, bool, int64_t, double, std::string, c10::ScalarType, c10::QScheme,
               std::shared_ptr<const ObserverSpec>>
      value_;
};

/// Keyword arguments in the order given.
using SpecArgs = std::vector<std::pair<std::string, SpecValue>>;

/// A class and its constructor arguments.
///
/// Example:
/// \code
///   ObserverSpec weight("PerChannelMinMaxObserver",
///                       {{"dtype", c10::kQInt8}, {"qscheme", c10::kPerChannelSymmetric}});
///   auto observer = weight.make();   // a fresh PerChannelMinMaxObserver
/// \endcode
class ObserverSpec {
 public:
  /// Raises c10::Error for a class no one registered.
  explicit ObserverSpec(std::string type, SpecArgs args = {});

  /// The qualified class name.
  const std::string& type() const { return type_; }
  /// The class name alone (`MinMaxObserver`).
  std::string short_type() const;
  const SpecArgs& args() const { return args_; }
  /// The argument `name`, or nullptr.
  const SpecValue* arg(std::string_view name) const;

  /// A spec with more arguments; a repeated name overrides (`with_args`).
  ObserverSpec with_args(const SpecArgs& more) const;
  /// A fresh instance. Raises c10::Error naming the class and the argument
  /// when an argument is unknown, of the wrong kind or invalid.
  std::shared_ptr<ActivationPostProcess> make() const;
  /// An instance made once per distinct spec and shared, for reading what
  /// the class makes of the arguments (dtype, quant range, eps, fixed
  /// qparams) where a fresh make() per node would cost more than the pass
  /// (a HistogramObserver allocates its histogram). Never feed it data.
  std::shared_ptr<ActivationPostProcess> prototype() const;

  /// Same class and same arguments (in any order), as PyTorch's
  /// `obs_or_fq_ctr_equals`.
  bool operator==(const ObserverSpec& other) const;
  bool operator!=(const ObserverSpec& other) const { return !(*this == other); }

  /// `HistogramObserver.with_args(reduce_range=True)`.
  const std::string& repr() const { return repr_; }

 private:
  std::string make_repr() const;

  std::string type_;
  SpecArgs args_;
  std::string repr_;  // made once: prototype() looks instances up by it
};

/// Typed access to a spec's arguments for a factory; errors name the class
/// and the argument.
class SpecReader {
 public:
  explicit SpecReader(const ObserverSpec& spec);

  bool has(const char* name) const;
  c10::ScalarType dtype(const char* name, c10::ScalarType fallback);
  c10::optional<c10::ScalarType> optional_dtype(const char* name);
  c10::QScheme qscheme(const char* name, c10::QScheme fallback);
  bool boolean(const char* name, bool fallback);
  int64_t integer(const char* name, int64_t fallback);
  c10::optional<int64_t> optional_integer(const char* name);
  double real(const char* name, double fallback);
  std::string text(const char* name, std::string fallback);
  /// A spec argument; a bare class name counts as a spec without arguments.
  ObserverSpec spec(const char* name, const ObserverSpec& fallback);
  /// Arguments not read yet, in order (FakeQuantize hands them on).
  SpecArgs rest();
  /// Raises c10::Error naming the first argument that was never read.
  void finish() const;

 private:
  const SpecValue* take(const char* name);
  [[noreturn]] void wrong_kind(const char* name, const char* expected, const SpecValue& value) const;

  const ObserverSpec& spec_;
  std::vector<bool> used_;
};

/// Makes an instance from its arguments.
using ObserverFactory = std::function<std::shared_ptr<ActivationPostProcess>(SpecReader&)>;

/// The classes an ObserverSpec can name.
class ObserverRegistry {
 public:
  static ObserverRegistry& instance();
  /// Adds a class under its qualified name.
  void add(const std::string& qualified_name, ObserverFactory factory);
  /// The qualified name for a qualified or short name, or nullopt.
  std::optional<std::string> resolve(std::string_view name) const;
  const ObserverFactory* find(const std::string& qualified_name) const;
  std::vector<std::string> names() const;

 private:
  std::vector<std::pair<std::string, ObserverFactory>> classes_;
};

/// Registers quant's built-ins: PyTorch's observer and fake-quantize
/// classes, as ObserverRegistry classes and as module kinds. Part of
/// qfx::register_builtins() (qfx/builtins.h).
void register_builtins();

}  // namespace qfx::quant
