// --backend / --qconfig: names or JSON files.

#include "config_args.h"

#include "qfx/backend/backend_json.h"
#include "qfx/backend/builtin_backends.h"
#include "qfx/quant/qconfig_json.h"

#include <nlohmann/json.hpp>

#include <ATen/Context.h>

namespace qfx::cli {
namespace {

bool is_json_file(const std::string& arg) {
  return arg.size() > 5 && arg.compare(arg.size() - 5, 5, ".json") == 0;
}

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

void use_engine(const std::string& engine) {
  TORCH_CHECK(engine == "onednn" || engine == "qnnpack", "--engine must be onednn or qnnpack, got '", engine, "'");
  at::globalContext().setQEngine(engine == "qnnpack" ? at::QEngine::QNNPACK : at::QEngine::ONEDNN);
}

}  // namespace qfx::cli
