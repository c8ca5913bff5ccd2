#pragma once
/// \file
/// ModuleRegistry: every module type qfx can hold in a GraphModule, with its
/// PyTorch qualified name (`torch.nn.Conv2d`) and how the interpreter calls its
/// forward(). Higher layers register their module types here (float modules
/// in `nn/`, quantized ones later), so the IR can run them without knowing them.

#include <ATen/core/ivalue.h>

#include <functional>
#include <memory>
#include <string>
#include <typeindex>
#include <unordered_map>
#include <vector>

namespace torch::nn {
class Module;
}

namespace qfx::ir {

/// Calls a module's forward on positional inputs.
using ModuleForward = std::function<c10::IValue(torch::nn::Module&, std::vector<c10::IValue>&)>;
/// Python's `extra_repr()` of a module (`3, 8, kernel_size=(3, 3), stride=(1, 1)`).
using ModuleExtraRepr = std::function<std::string(const torch::nn::Module&)>;

/// One registered module type.
struct ModuleKind {
  std::string qualified_name;  ///< PyTorch name, e.g. "torch.nn.Conv2d"
  std::type_index type;        ///< the C++ class (e.g. torch::nn::Conv2dImpl)
  ModuleForward forward;
  ModuleExtraRepr extra_repr;  ///< optional; none prints `Name()`
  std::string display_name;    ///< Python's `_get_name()`; default: last name part
  /// Prints under the instance's `name()` instead (modules standing for
  /// user classes, e.g. a TorchScript submodule run as it is).
  bool named_by_instance = false;
  /// An observer: forward returns its input as it is and changes only the
  /// module's own state, so the interpreter may run it on its observer
  /// thread while later nodes run.
  bool observer = false;
  /// Optional, for a kind that may compute in place (PyTorch's `inplace`):
  /// its forward into a new tensor, leaving the input as it is. The
  /// interpreter calls it where the input is a fresh tensor that observers
  /// still read on the observer thread, so they need not wait or copy.
  ModuleForward fresh_forward;
};

/// The process-wide table of module kinds.
class ModuleRegistry {
 public:
  static ModuleRegistry& instance();

  /// Adds a kind; raises c10::Error if its name or type is already taken.
  void add(ModuleKind kind);
  /// The kind of a module's dynamic type, or nullptr.
  const ModuleKind* find(const torch::nn::Module& module) const;
  /// The kind with this qualified name, or nullptr.
  const ModuleKind* find(const std::string& qualified_name) const;
  /// All qualified names, sorted.
  std::vector<std::string> names() const;

 private:
  std::vector<std::unique_ptr<ModuleKind>> kinds_;
  std::unordered_map<std::type_index, const ModuleKind*> by_type_;
  std::unordered_map<std::string, const ModuleKind*> by_name_;
};

/// Registers ir's built-ins: the torch functions, operators and tensor
/// methods the interpreter runs, and the container module kind
/// (`torch.nn.Module()`). Part of qfx::register_builtins() (qfx/builtins.h).
void register_builtins();

/// The qualified name of a module's type, or its C++ name if unregistered.
std::string module_type_name(const torch::nn::Module& module);

/// Python's `repr(module)`: `Name(extra_repr)`, children indented below.
std::string module_repr(const torch::nn::Module& module);

}  // namespace qfx::ir
