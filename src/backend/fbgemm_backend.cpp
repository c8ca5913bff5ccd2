// PyTorch 1.13's get_fbgemm_backend_config (backend_config/fbgemm.py): the
// native shape with fbgemm's dtypes, no layer norm.

#include "qfx/backend/builtin_backends.h"

#include "native_style.h"

namespace qfx::backend {

BackendConfig get_fbgemm_backend_config() {
  static const BackendConfig config = detail::native_style("fbgemm", detail::fbgemm_dtypes());
  return config;
}

}  // namespace qfx::backend
