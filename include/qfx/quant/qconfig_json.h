#pragma once
/// \file
/// JSON forms of observer specs, QConfigs and QConfigMappings (see
/// docs/config-format.md). Keys follow PyTorch's `QConfigMapping.to_dict()`:
///
/// \code{.json}
///   {"": {"activation": {"type": "torch.ao.quantization.observer.HistogramObserver",
///                        "args": {"reduce_range": true}},
///         "weight": "default_per_channel_weight_observer"},
///    "object_type": [["torch.nn.Linear", "default_dynamic_qconfig"], ["reshape", null]],
///    "module_name_regex": [["features\\.0\\..*", null]],
///    "module_name": [["classifier", null]],
///    "module_name_object_type_order": [["layer1", "torch.nn.functional.linear", 0, "default:onednn"]]}
/// \endcode
///
/// A spec is `{"type", "args"}` or a preset name; a QConfig is
/// `{"activation", "weight"}`, a preset name (`default_dynamic_qconfig`,
/// `default:onednn`, `qat:qnnpack`) or null (leave float); a whole mapping may
/// be a preset name too (`"default:onednn"`). Errors name the JSON path.

#include "qfx/quant/qconfig_mapping.h"

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace qfx::quant {

nlohmann::json spec_to_json(const ObserverSpec& spec);
/// `path` names where the value sits in the file, for error messages.
ObserverSpec spec_from_json(const nlohmann::json& json, const std::string& path);

nlohmann::json qconfig_to_json(const QConfigAny& qconfig);
QConfigAny qconfig_from_json(const nlohmann::json& json, const std::string& path);

nlohmann::json qconfig_mapping_to_json(const QConfigMapping& mapping);
QConfigMapping qconfig_mapping_from_json(const nlohmann::json& json);

/// Reads a QConfigMapping JSON file; errors name the file and the JSON path.
QConfigMapping load_qconfig_mapping(const std::string& file);

/// How deep load_json_file lets a file nest (qfx's configs need fewer than 10 levels).
constexpr int kMaxJsonDepth = 64;

/// Reads a JSON file; errors name the file. Nesting deeper than
/// kMaxJsonDepth is an error, not a stack overflow in its readers.
nlohmann::json load_json_file(const std::string& file);

}  // namespace qfx::quant
