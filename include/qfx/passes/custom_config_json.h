#pragma once
/// \file
/// The custom configs in JSON, with the keys of PyTorch's `to_dict()`
/// (classes by name, nested configs as their JSON):
/// \code
///   {"standalone_module_name": [["encoder", QCONFIG_MAPPING|null, EXAMPLE_INPUTS|null,
///                                PREPARE_CUSTOM_CONFIG|null, BACKEND|null]],
///    "standalone_module_class": [["models.Block", null, null, null, "qnnpack"]],
///    "float_to_observed_custom_module_class": {"static": {"models.Custom": "models.ObservedCustom"}},
///    "non_traceable_module_name": ["decoder"], "non_traceable_module_class": ["models.Gate"],
///    "input_quantized_idxs": [0], "output_quantized_idxs": [0],
///    "preserved_attributes": ["class_names"]}
/// \endcode
/// A standalone entry's QCONFIG_MAPPING is qfx's QConfigMapping JSON
/// (quant/qconfig_json.h), BACKEND a built-in name or a BackendConfig JSON
/// object; example inputs are accepted and not needed (nothing is traced).
/// ConvertCustomConfig: `observed_to_quantized_custom_module_class`,
/// `preserved_attributes`; FuseCustomConfig: `preserved_attributes`.
/// Unknown keys are errors naming their JSON path.

#include "qfx/passes/custom_config.h"

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace qfx {

/// Reads the to_dict() form; c10::Error names the JSON path of a bad value.
PrepareCustomConfig prepare_custom_config_from_json(const nlohmann::json& json);
ConvertCustomConfig convert_custom_config_from_json(const nlohmann::json& json);
FuseCustomConfig fuse_custom_config_from_json(const nlohmann::json& json);
/// Reads a file; errors start with the file name.
PrepareCustomConfig load_prepare_custom_config(const std::string& file);
ConvertCustomConfig load_convert_custom_config(const std::string& file);

}  // namespace qfx
