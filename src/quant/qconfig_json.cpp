// JSON <-> specs, QConfigs and QConfigMappings. Reading is strict: an unknown
// key, class, dtype or argument is an error naming its JSON path.

#include "qfx/quant/qconfig_json.h"

#include "qfx/ir/python_literals.h"
#include "util/json_path.h"

#include <c10/util/Exception.h>
#include <nlohmann/json.hpp>

#include <fstream>

namespace qfx::quant {
namespace {

using nlohmann::json;
using qfx::detail::check_keys;
using qfx::detail::echoed;
using qfx::detail::index_path;
using qfx::detail::join_path;
using qfx::detail::json_fail;

json value_to_json(const SpecValue& v) {
  if (v.is_none()) return nullptr;
  if (v.is_bool()) return v.to_bool();
  if (v.is_int()) return v.to_int();
  if (v.is_double()) return v.to_double();
  if (v.is_string()) return v.to_string();
  if (v.is_dtype()) return ir::dtype_name(v.to_dtype());
  if (v.is_qscheme()) return qscheme_name(v.to_qscheme());
  return spec_to_json(v.to_spec());
}

SpecValue value_from_json(const json& j, const std::string& path) {
  if (j.is_null()) return {};
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_number_float()) return j.get<double>();
  if (j.is_object()) return spec_from_json(j, path);
  if (!j.is_string()) json_fail(path, "expected a value, not " + std::string(j.type_name()));
  std::string s = j.get<std::string>();
  if (auto dtype = ir::parse_dtype(s)) return *dtype;
  if (auto qscheme = parse_qscheme(s)) return *qscheme;
  if (s.rfind("torch.", 0) == 0 && s.find("per_") != std::string::npos) json_fail(path, "unknown qscheme " + echoed(s));
  if (s.rfind("torch.", 0) == 0 && s.find('.', 6) == std::string::npos) json_fail(path, "unknown dtype " + echoed(s));
  return s;
}

const json& list_at(const json& j, const char* key, const std::string& path) {
  const json& list = j.at(key);
  if (!list.is_array()) json_fail(join_path(path, key), "expected a list");
  return list;
}

const json& entry(const json& list, size_t i, size_t size, const std::string& path) {
  const json& e = list[i];
  if (!e.is_array() || e.size() != size)
    json_fail(index_path(path, i), "expected a list of " + std::to_string(size) + " items");
  return e;
}

std::string name_at(const json& j, const std::string& path) {
  if (!j.is_string()) json_fail(path, "expected a name (string)");
  return j.get<std::string>();
}

}  // namespace

json spec_to_json(const ObserverSpec& spec) {
  json args = json::object();
  for (const auto& [key, value] : spec.args()) args[key] = value_to_json(value);
  return {{"type", spec.type()}, {"args", args}};
}

ObserverSpec spec_from_json(const json& j, const std::string& path) {
  if (j.is_string()) {
    std::string name = j.get<std::string>();
    if (auto preset = observer_preset(name)) return *preset;
    if (ObserverRegistry::instance().resolve(name)) return ObserverSpec(name);
    json_fail(path, "unknown observer " + echoed(name));
  }
  if (!j.is_object()) json_fail(path, "expected an observer: {\"type\": ..., \"args\": {...}} or a preset name");
  check_keys(j, {"type", "args"}, path);
  if (!j.contains("type") || !j["type"].is_string()) json_fail(join_path(path, "type"), "expected a class name");
  std::string type = j["type"].get<std::string>();
  if (!ObserverRegistry::instance().resolve(type))
    json_fail(join_path(path, "type"), "unknown observer class " + echoed(type));
  SpecArgs args;
  if (j.contains("args")) {
    if (!j["args"].is_object()) json_fail(join_path(path, "args"), "expected an object of arguments");
    for (const auto& item : j["args"].items()) {
      args.emplace_back(item.key(), value_from_json(item.value(), join_path(join_path(path, "args"), item.key())));
    }
  }
  ObserverSpec spec(type, args);
  try {
    spec.make();  // checks argument names, kinds and values now, with the path at hand
  } catch (const c10::Error& e) {
    json_fail(path, e.what_without_backtrace());
  }
  return spec;
}

json qconfig_to_json(const QConfigAny& qconfig) {
  if (!qconfig) return nullptr;
  return {{"activation", spec_to_json(qconfig->activation)}, {"weight", spec_to_json(qconfig->weight)}};
}

QConfigAny qconfig_from_json(const json& j, const std::string& path) {
  if (j.is_null()) return std::nullopt;
  if (j.is_string()) {
    auto preset = qconfig_preset(j.get<std::string>());
    if (!preset) json_fail(path, "unknown qconfig preset " + echoed(j.get<std::string>()));
    return preset;
  }
  if (!j.is_object()) json_fail(path, "expected a qconfig: {\"activation\", \"weight\"}, a preset name or null");
  check_keys(j, {"activation", "weight"}, path);
  if (!j.contains("activation") || !j.contains("weight")) json_fail(path, "a qconfig needs both activation and weight");
  return QConfig{spec_from_json(j["activation"], join_path(path, "activation")),
                 spec_from_json(j["weight"], join_path(path, "weight"))};
}

json qconfig_mapping_to_json(const QConfigMapping& m) {
  json object_type = json::array();
  for (const auto& [type, qconfig] : m.object_type_qconfigs()) object_type.push_back({type, qconfig_to_json(qconfig)});
  json regex = json::array();
  for (const auto& e : m.module_name_regex_qconfigs()) regex.push_back({e.pattern, qconfig_to_json(e.qconfig)});
  json names = json::array();
  for (const auto& [name, qconfig] : m.module_name_qconfigs()) names.push_back({name, qconfig_to_json(qconfig)});
  json orders = json::array();
  for (const auto& e : m.module_name_object_type_order_qconfigs()) {
    orders.push_back({e.module_name, e.object_type, e.index, qconfig_to_json(e.qconfig)});
  }
  return {{"", qconfig_to_json(m.global_qconfig())},
          {"object_type", object_type},
          {"module_name_regex", regex},
          {"module_name", names},
          {"module_name_object_type_order", orders}};
}

QConfigMapping qconfig_mapping_from_json(const json& j) {
  if (j.is_string()) {
    std::string name = j.get<std::string>();
    size_t colon = name.find(':');
    std::string kind = name.substr(0, colon);
    if (colon != std::string::npos && kind == "default") return get_default_qconfig_mapping(name.substr(colon + 1));
    if (colon != std::string::npos && kind == "qat") return get_default_qat_qconfig_mapping(name.substr(colon + 1));
    json_fail("", "unknown qconfig mapping preset " + echoed(name) + " (expected default:BACKEND or qat:BACKEND)");
  }
  if (!j.is_object()) json_fail("", "expected a qconfig mapping object or a preset name");
  check_keys(j, {"", "object_type", "module_name_regex", "module_name", "module_name_object_type_order"}, "");
  QConfigMapping m;
  if (j.contains("")) m.set_global(qconfig_from_json(j[""], "\"\""));
  if (j.contains("object_type")) {
    const json& list = list_at(j, "object_type", "");
    for (size_t i = 0; i < list.size(); ++i) {
      const json& e = entry(list, i, 2, index_path("object_type", i));
      m.set_object_type(name_at(e[0], index_path("object_type", i) + "[0]"),
                        qconfig_from_json(e[1], index_path("object_type", i) + "[1]"));
    }
  }
  if (j.contains("module_name_regex")) {
    const json& list = list_at(j, "module_name_regex", "");
    for (size_t i = 0; i < list.size(); ++i) {
      std::string p = index_path("module_name_regex", i);
      const json& e = entry(list, i, 2, "module_name_regex");
      try {
        m.set_module_name_regex(name_at(e[0], p + "[0]"), qconfig_from_json(e[1], p + "[1]"));
      } catch (const c10::Error& err) {
        json_fail(p, err.what_without_backtrace());
      }
    }
  }
  if (j.contains("module_name")) {
    const json& list = list_at(j, "module_name", "");
    for (size_t i = 0; i < list.size(); ++i) {
      const json& e = entry(list, i, 2, "module_name");
      m.set_module_name(name_at(e[0], index_path("module_name", i) + "[0]"),
                        qconfig_from_json(e[1], index_path("module_name", i) + "[1]"));
    }
  }
  if (j.contains("module_name_object_type_order")) {
    const json& list = list_at(j, "module_name_object_type_order", "");
    for (size_t i = 0; i < list.size(); ++i) {
      std::string p = index_path("module_name_object_type_order", i);
      const json& e = entry(list, i, 4, "module_name_object_type_order");
      if (!e[2].is_number_integer()) json_fail(p + "[2]", "expected an index (integer)");
      m.set_module_name_object_type_order(name_at(e[0], p + "[0]"), name_at(e[1], p + "[1]"), e[2].get<int64_t>(),
                                          qconfig_from_json(e[3], p + "[3]"));
    }
  }
  return m;
}

json load_json_file(const std::string& file) {
  std::ifstream in(file);
  TORCH_CHECK(in.good(), "cannot open '", file, "'");
  auto bounded = [&](int depth, json::parse_event_t /*event*/, json& /*parsed*/) {
    TORCH_CHECK(depth <= kMaxJsonDepth, file, ": JSON nested deeper than ", kMaxJsonDepth, " levels");
    return true;
  };
  try {
    return json::parse(in, bounded);
  } catch (const json::exception& e) {  // syntax errors, numbers out of range
    TORCH_CHECK(false, file, ": not valid JSON: ", e.what());
  }
}

QConfigMapping load_qconfig_mapping(const std::string& file) {
  json j = load_json_file(file);
  try {
    return qconfig_mapping_from_json(j);
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, file, ": ", e.what_without_backtrace());
  }
}

}  // namespace qfx::quant
