// PyTorch 1.13's get_native_backend_config (backend_config/native.py):
// fbgemm's dtypes plus layer norm with quint8 input and output. Built once
// (a few hundred pattern configs); each call returns a copy the caller may change.

#include "qfx/backend/builtin_backends.h"

#include "native_style.h"

namespace qfx::backend {

BackendConfig get_native_backend_config() {
  static const BackendConfig config = [] {
    detail::FamilyDTypes d = detail::fbgemm_dtypes();
    d.layer_norm = {detail::input_output_only_quint8()};
    return detail::native_style("native", d);
  }();
  return config;
}

}  // namespace qfx::backend
