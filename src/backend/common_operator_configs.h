#pragma once
// The pattern configs the built-in backends share, as PyTorch 1.13's
// `_common_operator_config_utils.py` builds them: each function returns the
// configs of one op family for the given dtype configs, in PyTorch's order
// (BackendConfig then keeps the last config of a repeated pattern in the place
// of the first, as PyTorch's dict does).

#include "qfx/backend/backend_config.h"

#include <vector>

namespace qfx::backend::detail {

/// The observation types as the config rows spell them.
inline constexpr auto kDifferent = ObservationType::OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT;
inline constexpr auto kShare = ObservationType::OUTPUT_SHARE_OBSERVER_WITH_INPUT;

using DTypeConfigs = std::vector<DTypeConfig>;
using PatternConfigs = std::vector<BackendPatternConfig>;

PatternConfigs binary_op_configs(const DTypeConfigs& dtype_configs);
PatternConfigs linear_configs(const DTypeConfigs& dtype_configs);
PatternConfigs conv_configs(const DTypeConfigs& dtype_configs);
BackendPatternConfig cat_config(const DTypeConfigs& dtype_configs);
PatternConfigs ln_configs(const DTypeConfigs& dtype_configs);
PatternConfigs default_op_configs(const DTypeConfigs& dtype_configs);
PatternConfigs fixed_qparams_op_configs(const DTypeConfigs& dtype_configs);
PatternConfigs share_qparams_op_configs(const DTypeConfigs& dtype_configs);
PatternConfigs bn_configs(const DTypeConfigs& dtype_configs);
PatternConfigs rnn_op_configs(const DTypeConfigs& dtype_configs);
PatternConfigs embedding_op_configs(const DTypeConfigs& dtype_configs);

/// A single-op config: `op` observed with different input and output observers.
BackendPatternConfig op_config(const std::string& op, const DTypeConfigs& dtype_configs,
                               ObservationType type = ObservationType::OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT);

/// A weighted module's config: root module swapped for `reference` at
/// convert, and for `qat` (if given) at prepare_qat.
BackendPatternConfig weighted_module_config(const std::string& module, const std::string& root,
                                            const std::string& reference, const std::string& qat,
                                            const DTypeConfigs& dtype_configs);

/// A fusion config: a sequence in forward order fused into `fused_module`.
BackendPatternConfig fusion_config(const std::vector<std::string>& sequence, const std::string& fused_module,
                                   const DTypeConfigs& dtype_configs);

}  // namespace qfx::backend::detail
