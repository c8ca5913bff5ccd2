#pragma once
// Reading the CLI's --backend and --qconfig arguments: a built-in name or
// preset, or a JSON file (docs/config-format.md).

#include "qfx/backend/backend_config.h"
#include "qfx/ir/graph_module.h"
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

/// Notes that static int8 convolutions or linears ran, or were written for
/// the current engine (`conv_or_linear`): on onednn, on a CPU where they
/// saturate (ir::onednn_saturates), saturation_warning() then says so.
void note_static_int8(bool conv_or_linear);

/// Whether `gm` calls a static (not dynamic) quantized convolution or linear.
bool has_static_int8_conv_or_linear(const ir::GraphModule& gm);

/// After a command that noted static int8 convolutions or linears on a
/// saturating onednn: the warning that says so, printed once the command
/// succeeded (an error stays one line); else "".
std::string saturation_warning();

}  // namespace qfx::cli
