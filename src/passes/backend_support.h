#pragma once
// Whether a backend runs a matched pattern with the dtypes a qconfig asks
// for: PyTorch 1.13's _is_pattern_dtype_config_and_qconfig_supported_by_backend
// with its constraint checks (quant range, min scale), plus PyTorch 2.x's
// exact-match constraints of fixed-qparams ops. Internal to the passes.

#include "target_dtypes.h"

#include <string>

namespace qfx::passes::detail {

/// Why the backend cannot run `match` as `qconfig` asks ("" when it can):
/// the first dtype config's first violated requirement, for the warning.
std::string unsupported_reason(const QuantMatch& match, const quant::QConfig& qconfig,
                               const std::unordered_map<const ir::Node*, DtypeInfo>& dtypes,
                               const WeightArgs& weight_args);

/// PyTorch's is_qconfig_supported_by_dtype_configs: whether convert gives a
/// weighted module with `qconfig` a quantized weight under `configs`.
bool supported_by_dtype_configs(const quant::QConfig& qconfig, const std::vector<backend::DTypeConfig>& configs);

}  // namespace qfx::passes::detail
