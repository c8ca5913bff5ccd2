#pragma once
// The TorchScript form of each module kind: an expression over the call's
// inputs, with the module's tensors and packed weights as attributes of the
// exported root module.

#include "qfx/ir/graph_module.h"

#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/nn/module.h>

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace qfx::nn {
class QuantizedLSTMImpl;
}

namespace qfx::io::detail {

/// The attributes of the exported module, each named once.
class ScriptAttrs {
 public:
  /// `unit` holds the classes of the export's submodules: one compilation
  /// unit per export, where each class name is made unique (TorchScript
  /// slows down and its memory grows with every unit that defines the same
  /// `__torch__.torch.nn.Conv2d` anew).
  explicit ScriptAttrs(std::shared_ptr<torch::jit::CompilationUnit> unit) : unit_(std::move(unit)) {}
  /// A new module of class `__torch__.<python_class>` in the export's unit.
  torch::jit::Module new_module(const std::string& python_class) const;
  const std::shared_ptr<torch::jit::CompilationUnit>& unit() const { return unit_; }
  /// `self.<name>` for a new attribute holding `value`, named after `hint`
  /// (a module path; dots become underscores).
  std::string add(const std::string& hint, const c10::IValue& value);
  /// An attribute named exactly `name` (a preserved attribute); c10::Error if taken.
  void add_exact(const std::string& name, const c10::IValue& value);
  const std::vector<std::pair<std::string, c10::IValue>>& values() const { return values_; }

 private:
  std::shared_ptr<torch::jit::CompilationUnit> unit_;
  std::vector<std::pair<std::string, c10::IValue>> values_;
  std::set<std::string> taken_{"training"};  // every module has `training`
};

/// The expression that computes `module` (at `path`) on `inputs` (printed
/// arguments); c10::Error naming the module type when it has no TorchScript form.
std::string module_expression(const torch::nn::Module& module, const std::string& path,
                              const std::vector<std::string>& inputs, ScriptAttrs& attrs);

/// `self.<name>` of a submodule of class `__torch__.torch.ao.nn.quantized.LSTM`
/// computing `lstm` (its forward takes input and optional (h_0, c_0)).
std::string quantized_lstm_submodule(const nn::QuantizedLSTMImpl& lstm, const std::string& path, ScriptAttrs& attrs);

/// The exported TorchScript module of a nested GraphModule (a standalone
/// module at `path`), as a module object to register as a submodule.
c10::IValue nested_script_module(const ir::GraphModule& gm, const std::string& path);

/// Compiles `source` (a `def forward`) into `module`, `torch.*` and
/// `torch.ops.*` resolved; c10::Error with TorchScript's message when rejected.
void define_forward(torch::jit::Module& module, const std::string& source);

/// Gives `module` the `training` attribute every Python module has, False:
/// the exported forward is the eval-mode one.
void mark_eval(torch::jit::Module& module);

/// A value as a TorchScript literal: ints, floats, bools, None, int lists.
std::string script_literal(const c10::IValue& value);

}  // namespace qfx::io::detail
