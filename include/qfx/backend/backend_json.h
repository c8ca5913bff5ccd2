#pragma once
/// \file
/// JSON form of BackendConfigs (docs/config-format.md), with the keys of
/// PyTorch 2.x's `BackendConfig.to_dict()`:
///
/// \code{.json}
///   {"name": "my_backend",
///    "configs": [
///      {"pattern": "torch.nn.Linear",
///       "observation_type": "OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT",
///       "dtype_configs": [{"input_dtype": {"dtype": "torch.quint8", "quant_min_lower_bound": 0,
///                                          "quant_max_upper_bound": 255,
///                                          "scale_min_lower_bound": 0.000244140625},
///                          "output_dtype": "torch.quint8", "weight_dtype": "torch.qint8",
///                          "bias_dtype": "torch.float32"}],
///       "root_module": "torch.nn.Linear",
///       "reference_quantized_module": "torch.ao.nn.quantized.reference.Linear"},
///      {"pattern": ["torch.nn.Conv2d", "torch.nn.ReLU"],
///       "fused_module": "torch.ao.nn.intrinsic.ConvReLU2d"},
///      {"pattern_complex_format": ["torch.nn.ReLU", ["operator.add", "torch.nn.Conv2d", "MatchAllNode"]],
///       "fuser_method": "_fuse_conv_add_relu_left", "root_node_getter": "_conv_add_relu_root_node_getter_left",
///       "extra_inputs_getter": "_conv_add_relu_extra_inputs_getter_left",
///       "fused_module": "torch.ao.nn.intrinsic.ConvAddReLU2d"}]}
/// \endcode
///
/// Reading is strict: an unknown key, op, module, dtype or function name is
/// a c10::Error naming the JSON path, e.g.
/// `configs[12].dtype_configs[0].input_dtype: unknown dtype "torch.quint9"`.

#include "qfx/backend/backend_config.h"

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace qfx::backend {

nlohmann::json dtype_config_to_json(const DTypeConfig& config);
DTypeConfig dtype_config_from_json(const nlohmann::json& json, const std::string& path);

/// A pattern as a JSON pair: {"pattern": ...} for one op or a sequence of 2
/// or 3, else {"pattern_complex_format": ...}.
nlohmann::json pattern_to_json(const pattern::Pattern& pattern);

nlohmann::json pattern_config_to_json(const BackendPatternConfig& config);
BackendPatternConfig pattern_config_from_json(const nlohmann::json& json, const std::string& path);

nlohmann::json backend_config_to_json(const BackendConfig& config);
BackendConfig backend_config_from_json(const nlohmann::json& json);

/// Reads a BackendConfig JSON file; errors name the file and the JSON path.
BackendConfig load_backend_config(const std::string& file);

}  // namespace qfx::backend
