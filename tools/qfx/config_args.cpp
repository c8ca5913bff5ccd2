// --backend / --qconfig: names or JSON files; --engine, and what its int8 kernels do on this CPU.

#include "config_args.h"

#include "qfx/backend/backend_json.h"
#include "qfx/backend/builtin_backends.h"
#include "qfx/ir/graph_module.h"
#include "qfx/ir/kernel_workarounds.h"
#include "qfx/ir/module_registry.h"
#include "qfx/quant/qconfig_json.h"

#include <nlohmann/json.hpp>

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <cstdlib>

namespace qfx::cli {
namespace {

bool is_json_file(const std::string& arg) { return arg.size() > 5 && arg.compare(arg.size() - 5, 5, ".json") == 0; }

}  // namespace

backend::BackendConfig backend_from_arg(const std::string& arg) {
  return is_json_file(arg) ? backend::load_backend_config(arg) : backend::get_backend_config(arg);
}

quant::QConfigMapping qconfig_mapping_from_arg(const std::string& arg) {
  if (is_json_file(arg)) return quant::load_qconfig_mapping(arg);
  try {
    return quant::qconfig_mapping_from_json(nlohmann::json(arg));
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, "--qconfig: ", e.what_without_backtrace());
  }
}

namespace {

bool& ran_on_saturating_onednn() {
  static bool ran = false;
  return ran;
}

}  // namespace

void note_static_int8(bool conv_or_linear) {
  if (conv_or_linear && at::globalContext().qEngine() == at::QEngine::ONEDNN && ir::onednn_saturates())
    ran_on_saturating_onednn() = true;
}

bool has_static_int8_conv_or_linear(const ir::GraphModule& gm) {
  auto int8 = [](const std::string& kind) {
    return kind.find("quantized") != std::string::npos && kind.find("dynamic") == std::string::npos &&
           (kind.find("onv") != std::string::npos || kind.find("inear") != std::string::npos);
  };
  for (const ir::Node* node : gm.graph().nodes()) {
    if (node->op() == ir::Opcode::kCallModule && int8(ir::module_type_name(*gm.get_submodule(node->target()))))
      return true;
    if (node->op() == ir::Opcode::kCallFunction && int8(node->target())) return true;
  }
  return false;
}

std::string saturation_warning() {
  if (!ran_on_saturating_onednn()) return "";
  return "this CPU has no VNNI: LibTorch 1.13's onednn int8 convolutions and linears saturate on it (tens of "
         "quantization steps off, as in PyTorch 1.13; docs/divergences.md). A file for onednn computes right on a "
         "CPU with VNNI; to run int8 on this one, use --engine qnnpack";
}

// Threads per engine, from docs/benchmarks.md (thread policy): oneDNN keeps
// LibTorch's default threads and OpenMP's default (spinning) wait policy,
// which PASSIVE slows up to 2.5x. QNNPACK runs in its own thread pool, and LibTorch's
// OpenMP threads spinning after each op starve it: with 2 threads,
// mobilenet_v2 at batch 1 takes 280 ms against 27.8 ms on 1 thread (18.6 ms
// with 2 threads under PASSIVE). So qnnpack runs on one thread unless OpenMP
// waits passively or the user set OMP_NUM_THREADS.
void use_engine(const std::string& engine) {
  TORCH_CHECK(engine == "onednn" || engine == "qnnpack", "--engine must be onednn or qnnpack, got '", engine, "'");
  at::globalContext().setQEngine(engine == "qnnpack" ? at::QEngine::QNNPACK : at::QEngine::ONEDNN);
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  bool passive = policy != nullptr && (std::string(policy) == "PASSIVE" || std::string(policy) == "passive");
  if (engine == "qnnpack" && !passive && std::getenv("OMP_NUM_THREADS") == nullptr) at::set_num_threads(1);
}

}  // namespace qfx::cli
