// PrepareCustomConfig's lookups and what the importer must keep whole.

#include "qfx/custom_config.h"

#include "qfx/ir/module_registry.h"
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

io::ImportOptions import_options(const PrepareCustomConfig& config) {
  io::ImportOptions options;
  for (const auto& entry : config.standalone_module_names) options.nested_module_names.push_back(entry.first);
  for (const auto& entry : config.standalone_module_classes) options.nested_module_classes.push_back(entry.first);
  options.script_module_names = config.non_traceable_module_names;
  options.script_module_classes = config.non_traceable_module_classes;
  for (const auto& [quant_type, classes] : config.float_to_observed_custom_module_classes) {
    for (const auto& entry : classes) {
      // a registered module kind (torch.nn.LSTM) is imported as such anyway
      if (ir::ModuleRegistry::instance().find(entry.first) == nullptr) {
        options.script_module_classes.push_back(entry.first);
      }
    }
  }
  options.preserved_attributes = config.preserved_attributes;
  return options;
}

}  // namespace qfx
