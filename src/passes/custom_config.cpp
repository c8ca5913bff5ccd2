// PrepareCustomConfig's lookups.

#include "qfx/passes/custom_config.h"

#include "qfx/nn/opaque_modules.h"

namespace qfx {

const StandaloneModuleConfig* PrepareCustomConfig::standalone_config(const std::string& path,
                                                                     const std::string& python_class) const {
  for (const auto& [name, config] : standalone_module_names) {
    if (name == path) return &config;
  }
  for (const auto& [name, config] : standalone_module_classes) {
    if (nn::class_name_matches(python_class, name)) return &config;
  }
  return nullptr;
}

}  // namespace qfx
