// PrepareCustomConfig from JSON (PyTorch's to_dict() keys).

#include "qfx/custom_config_json.h"

#include "qfx/quant/qconfig_json.h"
#include "util/json_path.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace qfx {
namespace {

using detail::join_path;
using detail::json_fail;

/// Keys PyTorch's PrepareCustomConfig has that qfx does not implement yet.
constexpr const char* kUnsupported[] = {"standalone_module_name", "standalone_module_class",
                                        "float_to_observed_custom_module_class", "non_traceable_module_name",
                                        "non_traceable_module_class", "preserved_attributes"};

std::vector<int64_t> indexes(const nlohmann::json& j, const std::string& path) {
  if (!j.is_array()) json_fail(path, "expected a list of input/output positions");
  std::vector<int64_t> out;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_number_integer() || j[i].get<int64_t>() < 0) {
      json_fail(detail::index_path(path, i), "expected a non-negative integer");
    }
    out.push_back(j[i].get<int64_t>());
  }
  return out;
}

}  // namespace

PrepareCustomConfig prepare_custom_config_from_json(const nlohmann::json& json) {
  if (!json.is_object()) json_fail("", "a PrepareCustomConfig is a JSON object");
  PrepareCustomConfig config;
  for (const auto& item : json.items()) {
    const std::string& key = item.key();
    if (key == "input_quantized_idxs") {
      config.input_quantized_indexes = indexes(item.value(), key);
    } else if (key == "output_quantized_idxs") {
      config.output_quantized_indexes = indexes(item.value(), key);
    } else if (std::find(std::begin(kUnsupported), std::end(kUnsupported), key) != std::end(kUnsupported)) {
      json_fail(join_path("", key), "not supported by qfx yet");
    } else {
      json_fail("", "unknown key \"" + key + "\"");
    }
  }
  return config;
}

PrepareCustomConfig load_prepare_custom_config(const std::string& file) {
  nlohmann::json j = quant::load_json_file(file);
  try {
    return prepare_custom_config_from_json(j);
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, file, ": ", e.what_without_backtrace());
  }
}

}  // namespace qfx
