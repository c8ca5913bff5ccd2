// The custom configs from JSON (PyTorch's to_dict() keys).

#include "qfx/passes/custom_config_json.h"

#include "qfx/backend/backend_json.h"
#include "qfx/backend/builtin_backends.h"
#include "qfx/quant/qconfig_json.h"
#include "util/json_path.h"

#include <nlohmann/json.hpp>

namespace qfx {
namespace {

using detail::index_path;
using detail::join_path;
using detail::json_fail;

std::vector<int64_t> indexes(const nlohmann::json& j, const std::string& path) {
  if (!j.is_array()) json_fail(path, "expected a list of input/output positions");
  std::vector<int64_t> out;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_number_integer() || j[i].get<int64_t>() < 0)
      json_fail(index_path(path, i), "expected a non-negative integer");
    out.push_back(j[i].get<int64_t>());
  }
  return out;
}

std::vector<std::string> names(const nlohmann::json& j, const std::string& path) {
  if (!j.is_array()) json_fail(path, "expected a list of names");
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string() || j[i].get<std::string>().empty()) json_fail(index_path(path, i), "expected a name");
    out.push_back(j[i].get<std::string>());
  }
  return out;
}

/// {"static": {"A": "B"}, ...}
CustomModuleMapping class_mapping(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) json_fail(path, "expected {quant type: {class: class}}");
  CustomModuleMapping out;
  for (const auto& [quant_type, classes] : j.items()) {
    std::string at = join_path(path, quant_type);
    if (quant_type != "static" && quant_type != "dynamic" && quant_type != "weight_only") {
      json_fail(at, "unknown quant type (static, dynamic, weight_only)");
    }
    if (!classes.is_object()) json_fail(at, "expected {class: class}");
    for (const auto& [from, to] : classes.items()) {
      if (!to.is_string()) json_fail(join_path(at, from), "expected a class name");
      out[quant_type][from] = to.get<std::string>();
    }
  }
  return out;
}

std::shared_ptr<const backend::BackendConfig> backend_of(const nlohmann::json& j, const std::string& path) {
  if (j.is_null()) return nullptr;
  return detail::at_path(path, [&] {
    return std::make_shared<const backend::BackendConfig>(
        j.is_string() ? backend::get_backend_config(j.get<std::string>()) : backend::backend_config_from_json(j));
  });
}

/// [name, qconfig_mapping, example_inputs, prepare_custom_config, backend_config]
std::pair<std::string, StandaloneModuleConfig> standalone_entry(const nlohmann::json& j, const std::string& path) {
  if (!j.is_array() || j.size() != 5 || !j[0].is_string()) {
    json_fail(path, "expected [name, qconfig_mapping, example_inputs, prepare_custom_config, backend_config]");
  }
  StandaloneModuleConfig config;
  if (!j[1].is_null()) {
    config.qconfig_mapping = detail::at_path(index_path(path, 1), [&] {
      return std::make_shared<const quant::QConfigMapping>(quant::qconfig_mapping_from_json(j[1]));
    });
  }
  if (!j[3].is_null()) {
    config.prepare_custom_config = detail::at_path(index_path(path, 3), [&] {
      return std::make_shared<const PrepareCustomConfig>(prepare_custom_config_from_json(j[3]));
    });
  }
  config.backend_config = backend_of(j[4], index_path(path, 4));
  return {j[0].get<std::string>(), std::move(config)};
}

std::vector<std::pair<std::string, StandaloneModuleConfig>> standalone_entries(const nlohmann::json& j,
                                                                               const std::string& path) {
  if (!j.is_array()) json_fail(path, "expected a list of standalone module entries");
  std::vector<std::pair<std::string, StandaloneModuleConfig>> out;
  for (size_t i = 0; i < j.size(); ++i) out.push_back(standalone_entry(j[i], index_path(path, i)));
  return out;
}

template <typename Config>
Config load(const std::string& file, Config (*from_json)(const nlohmann::json&)) {
  nlohmann::json j = quant::load_json_file(file);
  try {
    return from_json(j);
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, file, ": ", e.what_without_backtrace());
  }
}

}  // namespace

PrepareCustomConfig prepare_custom_config_from_json(const nlohmann::json& json) {
  if (!json.is_object()) json_fail("", "a PrepareCustomConfig is a JSON object");
  PrepareCustomConfig config;
  for (const auto& [key, value] : json.items()) {
    if (key == "standalone_module_name") {
      config.standalone_module_names = standalone_entries(value, key);
    } else if (key == "standalone_module_class") {
      config.standalone_module_classes = standalone_entries(value, key);
    } else if (key == "float_to_observed_custom_module_class") {
      config.float_to_observed_custom_module_classes = class_mapping(value, key);
    } else if (key == "non_traceable_module_name") {
      config.non_traceable_module_names = names(value, key);
    } else if (key == "non_traceable_module_class") {
      config.non_traceable_module_classes = names(value, key);
    } else if (key == "input_quantized_idxs") {
      config.input_quantized_indexes = indexes(value, key);
    } else if (key == "output_quantized_idxs") {
      config.output_quantized_indexes = indexes(value, key);
      if (!config.output_quantized_indexes.empty() && config.output_quantized_indexes != std::vector<int64_t>{0}) {
        json_fail(key, "must be [] or [0]: prepare keeps the model's one output quantized, not several");
      }
    } else if (key == "preserved_attributes") {
      config.preserved_attributes = names(value, key);
    } else {
      json_fail("", "unknown key " + detail::echoed(key));
    }
  }
  return config;
}

ConvertCustomConfig convert_custom_config_from_json(const nlohmann::json& json) {
  if (!json.is_object()) json_fail("", "a ConvertCustomConfig is a JSON object");
  detail::check_keys(json, {"observed_to_quantized_custom_module_class", "preserved_attributes"}, "");
  ConvertCustomConfig config;
  if (json.contains("observed_to_quantized_custom_module_class")) {
    config.observed_to_quantized_custom_module_classes =
        class_mapping(json["observed_to_quantized_custom_module_class"], "observed_to_quantized_custom_module_class");
  }
  if (json.contains("preserved_attributes")) {
    config.preserved_attributes = names(json["preserved_attributes"], "preserved_attributes");
  }
  return config;
}

FuseCustomConfig fuse_custom_config_from_json(const nlohmann::json& json) {
  if (!json.is_object()) json_fail("", "a FuseCustomConfig is a JSON object");
  detail::check_keys(json, {"preserved_attributes"}, "");
  FuseCustomConfig config;
  if (json.contains("preserved_attributes")) {
    config.preserved_attributes = names(json["preserved_attributes"], "preserved_attributes");
  }
  return config;
}

PrepareCustomConfig load_prepare_custom_config(const std::string& file) {
  return load(file, &prepare_custom_config_from_json);
}

ConvertCustomConfig load_convert_custom_config(const std::string& file) {
  return load(file, &convert_custom_config_from_json);
}

}  // namespace qfx
