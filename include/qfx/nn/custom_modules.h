#pragma once
/// \file
/// Custom module classes (PrepareCustomConfig's
/// `float_to_observed_custom_module_class`, ConvertCustomConfig's
/// `observed_to_quantized_custom_module_class`): the observed and quantized
/// classes a user provides, with PyTorch's `from_float` / `from_observed`
/// class methods as factories, registered under the names the configs use.
/// Each class is also a module kind (ir::ModuleRegistry) so the interpreter
/// runs it. The float class may be a registered kind or a user class kept as
/// TorchScript (nn::ScriptModuleImpl, see qfx::import_options).
///
/// \code
///   qfx::nn::register_custom_module_class(
///       {"ObservedCustom", [](const torch::nn::Module& float_module, const qfx::quant::QConfig&) { ... }, nullptr});
///   qfx::nn::register_custom_module_class(
///       {"QuantizedCustom", nullptr, [](const torch::nn::Module& observed,
///                                       qfx::quant::ActivationPostProcess* output_observer) { ... }});
/// \endcode

#include "qfx/quant/observer_base.h"
#include "qfx/quant/qconfig.h"

#include <torch/nn/module.h>

#include <functional>
#include <memory>
#include <string>

namespace qfx::nn {

/// One observed or quantized custom module class.
struct CustomModuleClass {
  /// The name configs use for it (`models.ObservedCustom` or `ObservedCustom`).
  std::string name;
  /// Observed class: `from_float(float_module)`, with the node's qconfig.
  std::function<std::shared_ptr<torch::nn::Module>(const torch::nn::Module& float_module,
                                                   const quant::QConfig& qconfig)>
      from_float;
  /// Quantized class: `from_observed(observed)`, with the observer of its
  /// output (PyTorch's `observed.activation_post_process`; its qparams are
  /// the output's), null for a module whose outputs are observed inside it
  /// (torch.ao.nn.quantizable.LSTM).
  std::function<std::shared_ptr<torch::nn::Module>(const torch::nn::Module& observed,
                                                   quant::ActivationPostProcess* output_observer)>
      from_observed;
};

/// Adds a class; c10::Error if the name is taken.
void register_custom_module_class(CustomModuleClass custom_class);

/// The class registered as `name` (exactly, or matching by class_name_matches), or nullptr.
const CustomModuleClass* find_custom_module_class(const std::string& name);

}  // namespace qfx::nn
