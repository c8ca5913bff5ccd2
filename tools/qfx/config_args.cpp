// --backend / --qconfig: names or JSON files.

#include "config_args.h"

#include "qfx/backend/backend_json.h"
#include "qfx/backend/builtin_backends.h"
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
