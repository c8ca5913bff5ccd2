// PyTorch 1.13's get_tensorrt_backend_config (backend_config/tensorrt.py):
// qint8 everywhere, conv, addmm, cat, linear, binary ops and the
// observer-sharing ops.

#include "qfx/backend/builtin_backends.h"

#include "common_operator_configs.h"

namespace qfx::backend {

BackendConfig get_tensorrt_backend_config() {
  using namespace detail;  // NOLINT: the op-family builders
  const DTypeConfigs weighted = {{c10::kQInt8, c10::kQInt8, c10::kQInt8, c10::kFloat}};
  const DTypeConfigs non_weighted = {{c10::kQInt8, c10::kQInt8}};
  BackendConfig config("tensorrt");
  config.set_backend_pattern_configs(conv_configs(weighted))
      .set_backend_pattern_config(
          op_config("torch.addmm", weighted)._set_input_type_to_index({{"bias", 0}, {"input", 1}, {"weight", 2}}))
      .set_backend_pattern_config(cat_config(non_weighted))
      .set_backend_pattern_configs(linear_configs(weighted))
      .set_backend_pattern_configs(binary_op_configs(weighted))
      .set_backend_pattern_configs(share_qparams_op_configs(non_weighted));
  return config;
}

}  // namespace qfx::backend
