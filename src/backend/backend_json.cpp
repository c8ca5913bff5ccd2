// BackendConfig <-> JSON. Writing emits only what is set, as PyTorch's
// to_dict(); reading checks every key and name and reports the JSON path of
// the first bad value.

#include "qfx/backend/backend_json.h"

#include "qfx/backend/backend_registry.h"
#include "qfx/ir/python_literals.h"
#include "qfx/quant/qconfig_json.h"
#include "util/json_path.h"

#include <nlohmann/json.hpp>

namespace qfx::backend {
namespace {

using nlohmann::json;
using qfx::detail::at_path;
using qfx::detail::check_keys;
using qfx::detail::echoed;
using qfx::detail::index_path;
using qfx::detail::join_path;
using qfx::detail::json_fail;

// ---- writing ---------------------------------------------------------------

json dtype_to_json(const DTypeWithConstraints& d) {
  json dtype = d.dtype ? json(ir::dtype_name(*d.dtype)) : json(nullptr);
  if (!d.has_constraints()) return dtype;
  json j = {{"dtype", dtype}};
  if (d.quant_min_lower_bound) j["quant_min_lower_bound"] = *d.quant_min_lower_bound;
  if (d.quant_max_upper_bound) j["quant_max_upper_bound"] = *d.quant_max_upper_bound;
  if (d.scale_min_lower_bound) j["scale_min_lower_bound"] = *d.scale_min_lower_bound;
  if (d.scale_max_upper_bound) j["scale_max_upper_bound"] = *d.scale_max_upper_bound;
  if (d.scale_exact_match) j["scale_exact_match"] = *d.scale_exact_match;
  if (d.zero_point_exact_match) j["zero_point_exact_match"] = *d.zero_point_exact_match;
  return j;
}

json nested_to_json(const pattern::NestedPattern& nested) {
  if (nested.args.empty()) return nested.op;
  json j = json::array({nested.op});
  for (const pattern::NestedPattern& arg : nested.args) j.push_back(nested_to_json(arg));
  return j;
}

void set_if(json& j, const char* key, const std::string& value) {
  if (!value.empty()) j[key] = value;
}

// ---- reading ---------------------------------------------------------------

std::string string_at(const json& j, const std::string& path, const char* what) {
  if (!j.is_string()) json_fail(path, std::string("expected ") + what + " (a string)");
  return j.get<std::string>();
}

c10::ScalarType dtype_from_name(const json& j, const std::string& path) {
  std::string name = string_at(j, path, "a dtype name");
  std::optional<c10::ScalarType> dtype = ir::parse_dtype(name);
  if (!dtype) json_fail(path, "unknown dtype " + echoed(name));
  return *dtype;
}

std::optional<int64_t> int_at(const json& j, const char* key, const std::string& path) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_number_integer()) json_fail(join_path(path, key), "expected an integer");
  return j[key].get<int64_t>();
}

std::optional<double> number_at(const json& j, const char* key, const std::string& path) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_number()) json_fail(join_path(path, key), "expected a number");
  return j[key].get<double>();
}

DTypeWithConstraints dtype_from_json(const json& j, const std::string& path) {
  if (j.is_null()) return {};
  if (!j.is_object()) return dtype_from_name(j, path);
  check_keys(j,
             {"dtype", "quant_min_lower_bound", "quant_max_upper_bound", "scale_min_lower_bound",
              "scale_max_upper_bound", "scale_exact_match", "zero_point_exact_match"},
             path);
  DTypeWithConstraints d;
  if (j.contains("dtype") && !j["dtype"].is_null()) d.dtype = dtype_from_name(j["dtype"], join_path(path, "dtype"));
  d.quant_min_lower_bound = int_at(j, "quant_min_lower_bound", path);
  d.quant_max_upper_bound = int_at(j, "quant_max_upper_bound", path);
  d.scale_min_lower_bound = number_at(j, "scale_min_lower_bound", path);
  d.scale_max_upper_bound = number_at(j, "scale_max_upper_bound", path);
  d.scale_exact_match = number_at(j, "scale_exact_match", path);
  d.zero_point_exact_match = int_at(j, "zero_point_exact_match", path);
  return d;
}

std::string op_at(const json& j, const std::string& path) {
  std::string name = string_at(j, path, "an op name");
  return at_path(path, [&] { return pattern::OpCatalog::instance().resolve(name).name; });
}

pattern::NestedPattern nested_from_json(const json& j, const std::string& path) {
  if (!j.is_array()) return pattern::NestedPattern(op_at(j, path));
  if (j.empty()) json_fail(path, "expected [op, argument patterns...], not an empty list");
  std::vector<pattern::NestedPattern> args;
  for (size_t i = 1; i < j.size(); ++i) args.push_back(nested_from_json(j[i], index_path(path, i)));
  return pattern::NestedPattern(op_at(j[0], index_path(path, 0)), std::move(args));
}

pattern::Pattern pattern_from_json(const json& j, const std::string& path) {
  bool simple = j.contains("pattern");
  if (simple == j.contains("pattern_complex_format")) {
    json_fail(path, "give exactly one of \"pattern\" and \"pattern_complex_format\"");
  }
  if (!simple) {
    std::string p = join_path(path, "pattern_complex_format");
    pattern::NestedPattern nested = nested_from_json(j["pattern_complex_format"], p);
    return at_path(p, [&] { return pattern::Pattern::from_nested(nested); });
  }
  std::string p = join_path(path, "pattern");
  const json& v = j["pattern"];
  if (!v.is_array()) return pattern::Pattern::op(op_at(v, p));
  if (v.size() < 2 || v.size() > 3) {
    json_fail(p, "a sequence pattern has 2 or 3 ops, got " + std::to_string(v.size()) +
                     "; write longer patterns in \"pattern_complex_format\"");
  }
  std::vector<std::string> ops;
  for (size_t i = 0; i < v.size(); ++i) ops.push_back(op_at(v[i], index_path(p, i)));
  return at_path(p, [&] { return pattern::Pattern::sequence(ops); });
}

ObservationType observation_type_at(const json& j, const std::string& path) {
  std::string name = string_at(j, path, "an observation type");
  std::optional<ObservationType> type = parse_observation_type(name);
  if (!type) json_fail(path, "unknown observation type " + echoed(name));
  return *type;
}

std::map<int64_t, ObservationType> num_tensor_args_from_json(const json& j, const std::string& path) {
  if (!j.is_object()) json_fail(path, "expected an object {\"NUM_TENSOR_ARGS\": OBSERVATION_TYPE}");
  std::map<int64_t, ObservationType> out;
  for (const auto& item : j.items()) {
    std::string p = join_path(path, item.key());
    size_t used = 0;
    int64_t n = -1;
    try {
      n = std::stoll(item.key(), &used);
    } catch (const std::exception&) {
    }
    if (used != item.key().size() || n < 0) json_fail(p, "expected a number of tensor arguments as key");
    out[n] = observation_type_at(item.value(), p);
  }
  return out;
}

std::map<std::string, int64_t> input_type_to_index_from_json(const json& j, const std::string& path) {
  if (!j.is_object()) json_fail(path, "expected an object {\"weight\": INDEX, ...}");
  std::map<std::string, int64_t> out;
  for (const auto& item : j.items()) {
    if (!item.value().is_number_integer()) json_fail(join_path(path, item.key()), "expected an argument index");
    out[item.key()] = item.value().get<int64_t>();
  }
  return out;
}

/// Calls `setter(value)` on the config when `key` is present, with errors at its path.
template <typename Setter>
void read_name(const json& j, const char* key, const std::string& path, const char* what, Setter setter) {
  if (!j.contains(key) || j[key].is_null()) return;
  std::string p = join_path(path, key);
  std::string name = string_at(j[key], p, what);
  at_path(p, [&] { setter(name); });
}

void read_dtype_configs(const json& j, const std::string& path, BackendPatternConfig& config) {
  if (!j.contains("dtype_configs")) return;
  std::string p = join_path(path, "dtype_configs");
  if (!j["dtype_configs"].is_array()) json_fail(p, "expected a list of dtype configs");
  for (size_t i = 0; i < j["dtype_configs"].size(); ++i) {
    config.add_dtype_config(dtype_config_from_json(j["dtype_configs"][i], index_path(p, i)));
  }
}

void read_modules(const json& j, const std::string& path, BackendPatternConfig& c) {
  const char* module = "a module type name";
  read_name(j, "root_module", path, module, [&](const std::string& n) { c.set_root_module(n); });
  read_name(j, "qat_module", path, module, [&](const std::string& n) { c.set_qat_module(n); });
  for (const char* key : {"reference_quantized_module", "reference_quantized_module_for_root"}) {
    read_name(j, key, path, module, [&](const std::string& n) { c.set_reference_quantized_module(n); });
  }
  read_name(j, "fused_module", path, module, [&](const std::string& n) { c.set_fused_module(n); });
  const char* function = "a registered function name";
  read_name(j, "fuser_method", path, function, [&](const std::string& n) { c.set_fuser_method(n); });
  read_name(j, "root_node_getter", path, function, [&](const std::string& n) { c._set_root_node_getter(n); });
  read_name(j, "extra_inputs_getter", path, function, [&](const std::string& n) { c._set_extra_inputs_getter(n); });
}

void read_internal(const json& j, const std::string& path, BackendPatternConfig& c) {
  if (j.contains("num_tensor_args_to_observation_type")) {
    c._set_num_tensor_args_to_observation_type(num_tensor_args_from_json(
        j["num_tensor_args_to_observation_type"], join_path(path, "num_tensor_args_to_observation_type")));
  }
  if (j.contains("input_type_to_index")) {
    c._set_input_type_to_index(
        input_type_to_index_from_json(j["input_type_to_index"], join_path(path, "input_type_to_index")));
  }
  if (j.contains("input_output_observed") && !j["input_output_observed"].is_null()) {
    if (!j["input_output_observed"].is_boolean())
      json_fail(join_path(path, "input_output_observed"), "expected true or false");
    c._set_input_output_observed(j["input_output_observed"].get<bool>());
  }
  if (j.contains("overwrite_output_fake_quantize") && !j["overwrite_output_fake_quantize"].is_null()) {
    c._set_overwrite_output_fake_quantize(
        quant::spec_from_json(j["overwrite_output_fake_quantize"], join_path(path, "overwrite_output_fake_quantize")));
  }
  if (j.contains("overwrite_output_observer") && !j["overwrite_output_observer"].is_null()) {
    c._set_overwrite_output_observer(
        quant::spec_from_json(j["overwrite_output_observer"], join_path(path, "overwrite_output_observer")));
  }
}

}  // namespace

json dtype_config_to_json(const DTypeConfig& c) {
  json j = json::object();
  if (c.input_dtype.dtype) j["input_dtype"] = dtype_to_json(c.input_dtype);
  if (c.output_dtype.dtype) j["output_dtype"] = dtype_to_json(c.output_dtype);
  if (c.weight_dtype.dtype) j["weight_dtype"] = dtype_to_json(c.weight_dtype);
  if (c.bias_dtype) j["bias_dtype"] = ir::dtype_name(*c.bias_dtype);
  if (c.is_dynamic) j["is_dynamic"] = *c.is_dynamic;
  return j;
}

DTypeConfig dtype_config_from_json(const json& j, const std::string& path) {
  if (!j.is_object()) json_fail(path, "expected a dtype config object");
  check_keys(j, {"input_dtype", "output_dtype", "weight_dtype", "bias_dtype", "is_dynamic"}, path);
  DTypeConfig c;
  if (j.contains("input_dtype")) c.input_dtype = dtype_from_json(j["input_dtype"], join_path(path, "input_dtype"));
  if (j.contains("output_dtype")) c.output_dtype = dtype_from_json(j["output_dtype"], join_path(path, "output_dtype"));
  if (j.contains("weight_dtype")) c.weight_dtype = dtype_from_json(j["weight_dtype"], join_path(path, "weight_dtype"));
  if (j.contains("bias_dtype") && !j["bias_dtype"].is_null()) {
    c.bias_dtype = dtype_from_name(j["bias_dtype"], join_path(path, "bias_dtype"));
  }
  if (j.contains("is_dynamic") && !j["is_dynamic"].is_null()) {
    if (!j["is_dynamic"].is_boolean()) json_fail(join_path(path, "is_dynamic"), "expected true or false");
    c.is_dynamic = j["is_dynamic"].get<bool>();
  }
  return c;
}

json pattern_to_json(const pattern::Pattern& p) {
  std::vector<std::string> ops = p.sequence_names();
  if (ops.size() == 1) return {{"pattern", ops[0]}};
  if (ops.size() == 2 || ops.size() == 3) return {{"pattern", ops}};
  return {{"pattern_complex_format", nested_to_json(p.to_nested())}};
}

json pattern_config_to_json(const BackendPatternConfig& c) {
  json j = pattern_to_json(c.pattern());
  j["observation_type"] = observation_type_name(c.observation_type());
  j["dtype_configs"] = json::array();
  for (const DTypeConfig& d : c.dtype_configs()) j["dtype_configs"].push_back(dtype_config_to_json(d));
  set_if(j, "root_module", c.root_module());
  set_if(j, "qat_module", c.qat_module());
  set_if(j, "reference_quantized_module", c.reference_quantized_module());
  set_if(j, "fused_module", c.fused_module());
  set_if(j, "fuser_method", c.fuser_method());
  set_if(j, "root_node_getter", c.root_node_getter());
  set_if(j, "extra_inputs_getter", c.extra_inputs_getter());
  if (!c.num_tensor_args_to_observation_type().empty()) {
    json m = json::object();
    for (const auto& [n, type] : c.num_tensor_args_to_observation_type())
      m[std::to_string(n)] = observation_type_name(type);
    j["num_tensor_args_to_observation_type"] = m;
  }
  if (!c.input_type_to_index().empty()) j["input_type_to_index"] = c.input_type_to_index();
  if (c.input_output_observed()) j["input_output_observed"] = *c.input_output_observed();
  if (c.overwrite_output_fake_quantize()) {
    j["overwrite_output_fake_quantize"] = quant::spec_to_json(*c.overwrite_output_fake_quantize());
  }
  if (c.overwrite_output_observer())
    j["overwrite_output_observer"] = quant::spec_to_json(*c.overwrite_output_observer());
  return j;
}

BackendPatternConfig pattern_config_from_json(const json& j, const std::string& path) {
  if (!j.is_object()) json_fail(path, "expected a backend pattern config object");
  check_keys(j,
             {"pattern", "pattern_complex_format", "observation_type", "dtype_configs", "root_module", "qat_module",
              "reference_quantized_module", "reference_quantized_module_for_root", "fused_module", "fuser_method",
              "root_node_getter", "extra_inputs_getter", "num_tensor_args_to_observation_type", "input_type_to_index",
              "input_output_observed", "overwrite_output_fake_quantize", "overwrite_output_observer"},
             path);
  BackendPatternConfig c;
  c.set_pattern(pattern_from_json(j, path));
  if (j.contains("observation_type")) {
    c.set_observation_type(observation_type_at(j["observation_type"], join_path(path, "observation_type")));
  }
  read_dtype_configs(j, path, c);
  read_modules(j, path, c);
  read_internal(j, path, c);
  at_path(path, [&] { c.validate(); });
  return c;
}

json backend_config_to_json(const BackendConfig& config) {
  json configs = json::array();
  for (const BackendPatternConfig& c : config.configs()) configs.push_back(pattern_config_to_json(c));
  return {{"name", config.name()}, {"configs", configs}};
}

BackendConfig backend_config_from_json(const json& j) {
  if (!j.is_object()) json_fail("", "expected a backend config object {\"name\", \"configs\"}");
  check_keys(j, {"name", "configs"}, "");
  BackendConfig config(j.contains("name") ? string_at(j["name"], "name", "a backend name") : "");
  if (!j.contains("configs")) return config;
  if (!j["configs"].is_array()) json_fail("configs", "expected a list of backend pattern configs");
  for (size_t i = 0; i < j["configs"].size(); ++i) {
    config.set_backend_pattern_config(pattern_config_from_json(j["configs"][i], index_path("configs", i)));
  }
  return config;
}

BackendConfig load_backend_config(const std::string& file) {
  json j = quant::load_json_file(file);
  return at_path(file, [&] { return backend_config_from_json(j); });
}

}  // namespace qfx::backend
