#pragma once
/// \file
/// Submodules the importer keeps whole instead of inlining their code, as
/// FX's QuantizationTracer keeps PrepareCustomConfig's modules as leaves:
///
/// - ScriptModuleImpl: a TorchScript submodule qfx runs as it is (a
///   non-traceable module, or the float form of a custom module class);
///   prints under its Python class name, exports as itself;
/// - NestedGraphModuleImpl: a submodule imported as its own GraphModule (a
///   standalone module), prepared and converted on its own; prints as
///   `GraphModule(...)`, exports as its own TorchScript module.

#include "qfx/ir/graph_module.h"
#include "qfx/nn/clone.h"

#include <ATen/core/ivalue.h>
#include <torch/nn/module.h>

#include <memory>
#include <string>
#include <vector>

namespace torch::jit {
struct Module;
}

namespace qfx::nn {

/// A TorchScript module run through torch::jit (registered as
/// `torch.jit.ScriptModule`).
class ScriptModuleImpl : public torch::nn::Module {
 public:
  /// `python_class` is the module's Python class (`models.Decoder`); it
  /// prints under its last part.
  ScriptModuleImpl(const torch::jit::Module& module, std::string python_class);
  /// A deep copy (the script module's deepcopy()).
  ScriptModuleImpl(const ScriptModuleImpl& other, DeepCopy);
  std::shared_ptr<torch::nn::Module> clone(const c10::optional<torch::Device>& device = c10::nullopt) const override;
  c10::IValue forward(std::vector<c10::IValue> inputs);
  /// Sets the mode of this module and of the TorchScript module.
  void train(bool on = true) override;
  /// The TorchScript module.
  const torch::jit::Module& script() const { return *module_; }
  /// The Python class it stands for, as given.
  const std::string& python_class() const { return python_class_; }

 private:
  std::shared_ptr<torch::jit::Module> module_;
  std::string python_class_;
};

/// A GraphModule used as a submodule of another (registered as
/// `torch.fx.GraphModule`); its forward runs the nested graph.
class NestedGraphModuleImpl : public torch::nn::Module {
 public:
  /// `python_class` is the class the nested module was imported from.
  NestedGraphModuleImpl(std::unique_ptr<ir::GraphModule> graph_module, std::string python_class);
  /// A deep copy (GraphModule::deep_copy).
  NestedGraphModuleImpl(const NestedGraphModuleImpl& other, DeepCopy);
  std::shared_ptr<torch::nn::Module> clone(const c10::optional<torch::Device>& device = c10::nullopt) const override;
  c10::IValue forward(std::vector<c10::IValue> inputs);
  ir::GraphModule& graph_module() const { return *graph_module_; }
  /// The Python class it was imported from (`models.Block`).
  const std::string& python_class() const { return python_class_; }

  /// Set by prepare: the inputs it takes quantized and whether its output
  /// stays quantized (its PrepareCustomConfig's indexes).
  std::vector<int64_t> input_quantized_indexes, output_quantized_indexes;

 private:
  std::shared_ptr<ir::GraphModule> graph_module_;
  std::string python_class_;
};

/// The Python class a module stands for: a ScriptModuleImpl's or
/// NestedGraphModuleImpl's own, else its registered PyTorch name.
std::string python_class_of(const torch::nn::Module& module);

/// True when `python_class` is `wanted` or ends in `.` + `wanted` (a class
/// may be named with or without its Python module).
bool class_name_matches(const std::string& python_class, const std::string& wanted);

}  // namespace qfx::nn
