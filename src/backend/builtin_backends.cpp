// The table of built-in backends by name. Each backend is defined in its own
// file, as PyTorch 1.13's backend_config package: native_backend.cpp,
// fbgemm_backend.cpp, x86_backend.cpp, qnnpack_backend.cpp (their shared
// shape in native_style.cpp), onednn_backend.cpp, executorch_backend.cpp,
// tensorrt_backend.cpp; and qfx's onnxruntime_backend.cpp.

#include "qfx/backend/builtin_backends.h"
#include "util/json_path.h"

#include <c10/util/Exception.h>

#include <utility>
#include <vector>

namespace qfx::backend {
namespace {

using BackendMaker = BackendConfig (*)();

const std::vector<std::pair<std::string, BackendMaker>>& builtins() {
  static const std::vector<std::pair<std::string, BackendMaker>> kBuiltins = {
      {"native", get_native_backend_config},     {"fbgemm", get_fbgemm_backend_config},
      {"qnnpack", get_qnnpack_backend_config},   {"x86", get_x86_backend_config},
      {"onednn", get_onednn_backend_config},     {"executorch", get_executorch_backend_config},
      {"tensorrt", get_tensorrt_backend_config}, {"onnxruntime", get_onnxruntime_backend_config},
  };
  return kBuiltins;
}

}  // namespace

std::vector<std::string> builtin_backend_names() {
  std::vector<std::string> names;
  for (const auto& builtin : builtins()) names.push_back(builtin.first);
  return names;
}

BackendConfig get_backend_config(const std::string& name) {
  for (const auto& [builtin, make] : builtins()) {
    if (name == builtin) return make();
  }
  std::string known;
  for (const std::string& n : builtin_backend_names()) known += (known.empty() ? "" : ", ") + n;
  TORCH_CHECK(false, "unknown backend ", qfx::detail::echoed(name), " (built-in: ", known, "; or a JSON file)");
}

}  // namespace qfx::backend
