#pragma once
// Reading the CLI's --backend and --qconfig arguments: a built-in name or
// preset, or a JSON file (docs/config-format.md).

#include "qfx/backend/backend_config.h"
#include "qfx/quant/qconfig_mapping.h"

#include <string>

namespace qfx::cli {

/// `native`, `onednn`, ... or a BackendConfig JSON file (`*.json`).
backend::BackendConfig backend_from_arg(const std::string& arg);

/// `default:onednn`, `qat:qnnpack`, ... or a QConfigMapping JSON file (`*.json`).
quant::QConfigMapping qconfig_mapping_from_arg(const std::string& arg);

/// `--engine onednn|qnnpack`: makes it LibTorch's quantized engine, with
/// its thread default (qnnpack: one thread unless OMP_WAIT_POLICY=PASSIVE
/// or OMP_NUM_THREADS is set); c10::Error for another name.
void use_engine(const std::string& engine);

}  // namespace qfx::cli
