// PyTorch 1.13's get_x86_backend_config (backend_config/x86.py): fbgemm's
// configs under another name.

#include "qfx/backend/builtin_backends.h"

#include "native_style.h"

namespace qfx::backend {

BackendConfig get_x86_backend_config() {
  static const BackendConfig config = detail::native_style("x86", detail::fbgemm_dtypes());
  return config;
}

}  // namespace qfx::backend
