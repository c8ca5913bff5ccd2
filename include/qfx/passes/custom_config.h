#pragma once
/// \file
/// The custom configs of `prepare_fx`, `convert_fx` and `fuse_fx`
/// (PyTorch's torch.ao.quantization.fx.custom_config), read by the passes. Classes are named by
/// their Python qualified name (`models.Block`) or bare class name (`Block`).
///
/// Modules the importer would inline (user classes) are kept whole only when
/// the model is imported with qfx::import_options(config) (quantize.h): pass the same config
/// to io::import_torchscript and to prepare_fx.
///
/// \code
///   qfx::PrepareCustomConfig custom;
///   custom.non_traceable_module_names = {"decoder"};       // run as TorchScript, left float
///   custom.standalone_module_names = {{"encoder", {}}};    // prepared on its own
///   auto gm = qfx::io::import_torchscript("model.pt", qfx::import_options(custom));
///   qfx::prepare_fx(*gm, mapping, backend, custom);
/// \endcode

#include "qfx/backend/backend_config.h"
#include "qfx/quant/qconfig_mapping.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace qfx {

struct PrepareCustomConfig;

/// A standalone module's own configs (PyTorch's StandaloneModuleConfigEntry);
/// each one left null comes from the parent.
struct StandaloneModuleConfig {
  /// Null: the module's qconfig in the parent, as the global qconfig.
  std::shared_ptr<const quant::QConfigMapping> qconfig_mapping;
  /// Null: empty (float inputs and output).
  std::shared_ptr<const PrepareCustomConfig> prepare_custom_config;
  /// Null: the parent's backend config.
  std::shared_ptr<const backend::BackendConfig> backend_config;
};

/// Per quantization type ("static", "dynamic", "weight_only"), a module class
/// -> the class that replaces it (nn/custom_modules.h registers them).
using CustomModuleMapping = std::map<std::string, std::map<std::string, std::string>>;

/// `PrepareCustomConfig`.
struct PrepareCustomConfig {
  /// Submodules (by path / by class) prepared as their own GraphModule.
  std::vector<std::pair<std::string, StandaloneModuleConfig>> standalone_module_names, standalone_module_classes;
  /// Float custom module class -> its observed class.
  CustomModuleMapping float_to_observed_custom_module_classes;
  /// Submodules (by path / by class) run as TorchScript and left float.
  std::vector<std::string> non_traceable_module_names, non_traceable_module_classes;
  /// Graph inputs that arrive quantized (quint8), by position.
  std::vector<int64_t> input_quantized_indexes;
  /// `{0}` to keep the graph output quantized.
  std::vector<int64_t> output_quantized_indexes;
  /// Root attributes kept on the model even though forward() does not use them.
  std::vector<std::string> preserved_attributes;

  /// The entry for the standalone module at `path` of class `python_class`
  /// (a name entry before a class entry, as PyTorch), or nullptr.
  const StandaloneModuleConfig* standalone_config(const std::string& path, const std::string& python_class) const;
};

/// `ConvertCustomConfig`.
struct ConvertCustomConfig {
  /// Observed custom module class -> its quantized class.
  CustomModuleMapping observed_to_quantized_custom_module_classes;
  /// Root attributes kept on the model.
  std::vector<std::string> preserved_attributes;
};

/// `FuseCustomConfig`.
struct FuseCustomConfig {
  /// Root attributes kept on the model.
  std::vector<std::string> preserved_attributes;
};

}  // namespace qfx
