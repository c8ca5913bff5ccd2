#pragma once
/// \file
/// TorchScript import: a model saved with `torch.jit.trace` (or
/// `torch.jit.script`, when forward() has no data-dependent control flow)
/// becomes a GraphModule shaped as `torch.fx.symbolic_trace` would trace the
/// Python model:
///
/// - `torch.nn` modules of the supported kinds (see nn/float_modules.h) are
///   leaves: `call_module` nodes whose targets are their paths
///   (`layer1.0.conv1`), with weights and hyper-parameters read from the file;
/// - `nn.Sequential` and user modules are inlined, as FX does;
/// - ATen ops become `call_function`/`call_method` nodes with FX's targets
///   (`x + y` -> `operator.add`, `torch.flatten`, `x.view(...)`), named as FX
///   names them;
/// - constant control flow (`if self.use_bn:`) and loops with constant trip
///   counts are evaluated; data-dependent control flow is an error.
///
/// What cannot be imported (an ATen op without a mapping, a `torch.nn`
/// module of an unsupported kind, data-dependent control flow) raises
/// c10::Error naming the op, the module path and the source location.

#include "qfx/ir/graph_module.h"

#include <memory>
#include <string>
#include <vector>

namespace torch::jit {
struct Module;
}

namespace qfx::io {

/// Submodules to keep whole instead of inlining, by module path (`decoder`)
/// or Python class (`models.Decoder` or `Decoder`), as PrepareCustomConfig's
/// non-traceable, standalone and custom modules are leaves of PyTorch's
/// trace. `qfx::import_options(prepare_custom_config)` fills it.
struct ImportOptions {
  /// Kept as TorchScript and run as such (nn::ScriptModuleImpl).
  std::vector<std::string> script_module_names, script_module_classes;
  /// Imported as their own GraphModule (nn::NestedGraphModuleImpl).
  std::vector<std::string> nested_module_names, nested_module_classes;
  /// Root attributes to read although forward() does not use them
  /// (GraphModule::preserved_attributes).
  std::vector<std::string> preserved_attributes;
};

/// Imports the TorchScript archive at `path`. Raises c10::Error naming the
/// file when it is missing or not a TorchScript archive.
///
/// Example:
/// \code
///   auto gm = qfx::io::import_torchscript("resnet18.pt");
///   std::cout << gm->code();
/// \endcode
std::unique_ptr<ir::GraphModule> import_torchscript(const std::string& path, const ImportOptions& options = {});

/// Loads a TorchScript file with torch::jit::load; c10::Error naming the file
/// when it cannot be opened or is not a TorchScript archive. The archive is
/// loaded once in a forked child first, so that a file on which LibTorch's
/// loader crashes (a damaged class body in its code) is an error too.
torch::jit::Module load_script(const std::string& path);

/// Imports a loaded TorchScript module.
std::unique_ptr<ir::GraphModule> import_torchscript(const torch::jit::Module& module,
                                                    const ImportOptions& options = {});

}  // namespace qfx::io
