// ObserverSpec, SpecValue, SpecReader and the class registry behind
// `with_args`-style observer constructors.

#include "qfx/quant/observer_spec.h"
#include "util/json_path.h"

#include "qfx/ir/python_literals.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <mutex>
#include <unordered_map>

namespace qfx::quant {

SpecValue::SpecValue(bool v) : value_(v) {}
SpecValue::SpecValue(int v) : value_(int64_t{v}) {}
SpecValue::SpecValue(int64_t v) : value_(v) {}
SpecValue::SpecValue(double v) : value_(v) {}
SpecValue::SpecValue(const char* v) : value_(std::string(v)) {}
SpecValue::SpecValue(std::string v) : value_(std::move(v)) {}
SpecValue::SpecValue(c10::ScalarType v) : value_(v) {}
SpecValue::SpecValue(c10::QScheme v) : value_(v) {}
SpecValue::SpecValue(const ObserverSpec& v) : value_(std::make_shared<const ObserverSpec>(v)) {}

double SpecValue::to_double() const { return is_int() ? static_cast<double>(to_int()) : std::get<double>(value_); }

const char* SpecValue::kind() const {
  if (is_none()) return "None";
  if (is_bool()) return "bool";
  if (is_int()) return "int";
  if (is_double()) return "float";
  if (is_string()) return "str";
  if (is_dtype()) return "dtype";
  if (is_qscheme()) return "qscheme";
  return "observer";
}

std::string SpecValue::repr() const {
  if (is_none()) return "None";
  if (is_bool()) return to_bool() ? "True" : "False";
  if (is_int()) return std::to_string(to_int());
  if (is_double()) return ir::python_float_repr(to_double());
  if (is_string()) return ir::python_str_repr(to_string());
  if (is_dtype()) return ir::dtype_name(to_dtype());
  if (is_qscheme()) return qscheme_name(to_qscheme());
  return to_spec().repr();
}

bool SpecValue::operator==(const SpecValue& other) const {
  bool numeric = (is_int() || is_double()) && (other.is_int() || other.is_double());
  if (numeric) return to_double() == other.to_double();
  if (is_spec() && other.is_spec()) return to_spec() == other.to_spec();
  return value_ == other.value_;
}

ObserverRegistry& ObserverRegistry::instance() {
  static ObserverRegistry registry;
  return registry;
}

void ObserverRegistry::add(const std::string& qualified_name, ObserverFactory factory) {
  TORCH_CHECK(!find(qualified_name), "observer class ", qualified_name, " is registered twice");
  classes_.emplace_back(qualified_name, std::move(factory));
}

std::optional<std::string> ObserverRegistry::resolve(std::string_view name) const {
  for (const auto& [qualified, factory] : classes_) {
    if (qualified == name) return qualified;
  }
  for (const auto& [qualified, factory] : classes_) {
    size_t dot = qualified.rfind('.');
    if (qualified.compare(dot + 1, std::string::npos, name) == 0) return qualified;
  }
  return std::nullopt;
}

const ObserverFactory* ObserverRegistry::find(const std::string& qualified_name) const {
  for (const auto& [qualified, factory] : classes_) {
    if (qualified == qualified_name) return &factory;
  }
  return nullptr;
}

std::vector<std::string> ObserverRegistry::names() const {
  std::vector<std::string> names;
  for (const auto& entry : classes_) names.push_back(entry.first);
  std::sort(names.begin(), names.end());
  return names;
}

ObserverSpec::ObserverSpec(std::string type, SpecArgs args) : args_(std::move(args)) {
  auto qualified = ObserverRegistry::instance().resolve(type);
  TORCH_CHECK(qualified.has_value(), "unknown observer class ", qfx::detail::echoed(type));
  type_ = *qualified;
  repr_ = make_repr();
}

std::string ObserverSpec::short_type() const { return type_.substr(type_.rfind('.') + 1); }

const SpecValue* ObserverSpec::arg(std::string_view name) const {
  for (const auto& [key, value] : args_) {
    if (key == name) return &value;
  }
  return nullptr;
}

ObserverSpec ObserverSpec::with_args(const SpecArgs& more) const {
  SpecArgs merged = args_;
  for (const auto& entry : more) {
    auto it = std::find_if(merged.begin(), merged.end(), [&](const auto& kv) { return kv.first == entry.first; });
    if (it == merged.end()) {
      merged.push_back(entry);
    } else {
      it->second = entry.second;
    }
  }
  return ObserverSpec(type_, std::move(merged));
}

std::shared_ptr<ActivationPostProcess> ObserverSpec::make() const {
  SpecReader reader(*this);
  std::shared_ptr<ActivationPostProcess> made = (*ObserverRegistry::instance().find(type_))(reader);
  reader.finish();
  return made;
}

std::shared_ptr<ActivationPostProcess> ObserverSpec::prototype() const {
  // keyed by repr: a class is registered once, so a repr always makes the same
  static std::mutex mutex;
  static std::unordered_map<std::string, std::shared_ptr<ActivationPostProcess>> made;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = made.find(repr_);
    if (it != made.end()) return it->second;
  }
  std::shared_ptr<ActivationPostProcess> fresh = make();
  std::lock_guard<std::mutex> lock(mutex);
  return made.emplace(repr_, std::move(fresh)).first->second;
}

bool ObserverSpec::operator==(const ObserverSpec& other) const {
  if (type_ != other.type_ || args_.size() != other.args_.size()) return false;
  for (const auto& [key, value] : args_) {
    const SpecValue* theirs = other.arg(key);
    if (theirs == nullptr || *theirs != value) return false;
  }
  return true;
}

std::string ObserverSpec::make_repr() const {
  if (args_.empty()) return short_type();
  std::string out = short_type() + ".with_args(";
  for (size_t i = 0; i < args_.size(); ++i) out += (i ? ", " : "") + args_[i].first + "=" + args_[i].second.repr();
  return out + ")";
}

SpecReader::SpecReader(const ObserverSpec& spec) : spec_(spec), used_(spec.args().size(), false) {}

bool SpecReader::has(const char* name) const { return spec_.arg(name) != nullptr; }

const SpecValue* SpecReader::take(const char* name) {
  const auto& args = spec_.args();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].first == name) {
      used_[i] = true;
      return args[i].second.is_none() ? nullptr : &args[i].second;
    }
  }
  return nullptr;
}

void SpecReader::wrong_kind(const char* name, const char* expected, const SpecValue& value) const {
  TORCH_CHECK(false, spec_.short_type(), ": argument '", name, "' must be ", expected, ", not ", value.kind(), " ",
              value.repr());
}

c10::ScalarType SpecReader::dtype(const char* name, c10::ScalarType fallback) {
  return optional_dtype(name).value_or(fallback);
}

c10::optional<c10::ScalarType> SpecReader::optional_dtype(const char* name) {
  const SpecValue* v = take(name);
  if (v == nullptr) return c10::nullopt;
  if (!v->is_dtype()) wrong_kind(name, "a dtype", *v);
  return v->to_dtype();
}

c10::QScheme SpecReader::qscheme(const char* name, c10::QScheme fallback) {
  const SpecValue* v = take(name);
  if (v == nullptr) return fallback;
  if (!v->is_qscheme()) wrong_kind(name, "a qscheme", *v);
  return v->to_qscheme();
}

bool SpecReader::boolean(const char* name, bool fallback) {
  const SpecValue* v = take(name);
  if (v == nullptr) return fallback;
  if (!v->is_bool()) wrong_kind(name, "a bool", *v);
  return v->to_bool();
}

int64_t SpecReader::integer(const char* name, int64_t fallback) { return optional_integer(name).value_or(fallback); }

c10::optional<int64_t> SpecReader::optional_integer(const char* name) {
  const SpecValue* v = take(name);
  if (v == nullptr) return c10::nullopt;
  if (!v->is_int()) wrong_kind(name, "an int", *v);
  return v->to_int();
}

double SpecReader::real(const char* name, double fallback) {
  const SpecValue* v = take(name);
  if (v == nullptr) return fallback;
  if (!v->is_double() && !v->is_int()) wrong_kind(name, "a number", *v);
  return v->to_double();
}

std::string SpecReader::text(const char* name, std::string fallback) {
  const SpecValue* v = take(name);
  if (v == nullptr) return fallback;
  if (!v->is_string()) wrong_kind(name, "a str", *v);
  return v->to_string();
}

ObserverSpec SpecReader::spec(const char* name, const ObserverSpec& fallback) {
  const SpecValue* v = take(name);
  if (v == nullptr) return fallback;
  if (v->is_string()) return ObserverSpec(v->to_string());
  if (!v->is_spec()) wrong_kind(name, "an observer class", *v);
  return v->to_spec();
}

SpecArgs SpecReader::rest() {
  SpecArgs rest;
  const auto& args = spec_.args();
  for (size_t i = 0; i < args.size(); ++i) {
    if (used_[i]) continue;
    used_[i] = true;
    rest.push_back(args[i]);
  }
  return rest;
}

void SpecReader::finish() const {
  const auto& args = spec_.args();
  for (size_t i = 0; i < args.size(); ++i) {
    TORCH_CHECK(used_[i], spec_.short_type(), " has no argument '", args[i].first, "'");
  }
}

}  // namespace qfx::quant
