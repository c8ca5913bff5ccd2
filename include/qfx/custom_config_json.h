#pragma once
/// \file
/// PrepareCustomConfig in JSON, with the keys of PyTorch's
/// `PrepareCustomConfig.to_dict()`:
/// \code
///   {"input_quantized_idxs": [0], "output_quantized_idxs": [0]}
/// \endcode
/// The other keys PyTorch knows (standalone modules, custom module classes,
/// non-traceable modules, preserved attributes) are read as errors that say
/// qfx does not support them yet; unknown keys are errors too.

#include "qfx/quantize.h"

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace qfx {

/// Reads the to_dict() form; c10::Error names the JSON path of a bad value.
PrepareCustomConfig prepare_custom_config_from_json(const nlohmann::json& json);
/// Reads a file; errors start with the file name.
PrepareCustomConfig load_prepare_custom_config(const std::string& file);

}  // namespace qfx
