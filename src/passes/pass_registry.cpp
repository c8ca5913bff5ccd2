// The table of passes: name, summary, function. `qfx opt --passes` and the
// PassManager look passes up here.

#include "qfx/passes/pass.h"

#include "qfx/backend/builtin_backends.h"

#include <c10/util/Exception.h>

namespace qfx::passes {

const backend::BackendConfig& PassOptions::backend() const {
  if (backend_config) return *backend_config;
  static const backend::BackendConfig native = backend::get_native_backend_config();
  return native;
}

const std::vector<PassInfo>& pass_registry() {
  static const std::vector<PassInfo> passes = {
      {"fuse", "fuse the BackendConfig's fusion patterns into fused modules (fuse_fx)", &fuse},
      {"swap-qat-modules", "modules with a qconfig become the BackendConfig's QAT modules (prepare_qat_fx)",
       &swap_qat_modules},
      {"insert-observers", "insert observers where the QConfigMapping and the BackendConfig allow (prepare_fx)",
       &insert_observers},
      {"convert-to-reference", "observers to quantize/dequantize, weighted modules to reference modules",
       &convert_to_reference},
      {"lower-to-native", "reference patterns to quantized modules and ops with prepacked weights (convert_fx)",
       &lower_to_native},
      {"dce", "remove nodes whose values are not used", &dce},
  };
  return passes;
}

const PassInfo& find_pass(const std::string& name) {
  std::string known;
  for (const PassInfo& info : pass_registry()) {
    if (name == info.name) return info;
    known += (known.empty() ? "" : ", ") + std::string(info.name);
  }
  TORCH_CHECK(false, "unknown pass \"", name, "\" (passes: ", known, ")");
}

}  // namespace qfx::passes
