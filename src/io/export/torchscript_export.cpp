// export_torchscript: the graph in TorchScript's vocabulary (script_graph),
// printed by the FX code writer, compiled with torch::jit::Module::define,
// saved, and, when asked, loaded back and run once before it is written.

#include "qfx/io/torchscript_export.h"
#include "qfx/io/script_define.h"
#include "qfx/ir/op_names.h"

#include "module_script.h"
#include "script_graph.h"
#include "stderr_capture.h"

#include "qfx/ir/printer.h"

#include <torch/script.h>

#include <algorithm>
#include <cctype>
#include <iostream>
#include <iterator>
#include <optional>
#include <unordered_set>
#include <sstream>

namespace qfx::io {
namespace {

using detail::ScriptAttrs;

std::string source_of(const ir::GraphModule& gm, ScriptAttrs& attrs) {
  std::unique_ptr<ir::Graph> graph = detail::script_graph(gm, attrs);
  ir::CodegenHooks hooks;
  hooks.release_values = false;
  hooks.subscript_syntax = true;
  hooks.one_statement_per_line = true;
  hooks.placeholder_type = [](const ir::Node& node) {
    auto it = node.meta().find(ir::kInputTypeMeta);
    return it == node.meta().end() ? std::string() : std::any_cast<std::string>(it->second);
  };
  hooks.call_module = [&](const ir::Node& node, const std::vector<std::string>& args) {
    return detail::module_expression(*gm.get_submodule(node.target()), node.target(), args, attrs);
  };
  return ir::python_code(*graph, "self", hooks).substr(3);  // drop FX's leading blank lines
}

}  // namespace

std::string torchscript_source(const ir::GraphModule& gm) {
  ScriptAttrs attrs(std::make_shared<torch::jit::CompilationUnit>());
  return source_of(gm, attrs);
}

namespace {

/// The exported module of `gm`: its forward and attributes (preserved ones
/// under their own names), its TorchScript and nested modules as submodules.
torch::jit::Module script_module(const ir::GraphModule& gm, const std::string& class_name, bool pointwise_as_linear) {
  auto unit = std::make_shared<torch::jit::CompilationUnit>();
  ScriptAttrs attrs(unit, pointwise_as_linear);
  for (const auto& [name, value] : gm.preserved_attributes()) {
    // `training` is every module's flag: the exported module's own (False,
    // mark_eval) stands for it, as a preserved `training` does in PyTorch
    if (name != "training") attrs.add_exact(name, value);
  }
  std::string source = source_of(gm, attrs);
  torch::jit::Module module(class_name, unit, /*shouldMangle=*/true);
  detail::mark_eval(module);
  for (const auto& [name, value] : attrs.values()) {
    if (value.isObject() && value.toObjectRef().type()->is_module()) {
      module.register_module(name, torch::jit::Module(value.toObject()));
    } else {
      module.register_attribute(name, value.type(), value, /*is_param=*/false, /*is_buffer=*/value.isTensor());
    }
  }
  detail::define_forward(module, source);
  return module;
}

}  // namespace

namespace detail {

void mark_eval(torch::jit::Module& module) { module.register_attribute("training", c10::BoolType::get(), false); }

void define_forward(torch::jit::Module& module, const std::string& source) {
  try {
    define_method(module, source);
  } catch (const std::exception& e) {
    TORCH_CHECK(false, "export: TorchScript rejected the generated forward: ", e.what());
  }
}

c10::IValue nested_script_module(const ir::GraphModule& gm, const std::string& path, const ScriptAttrs& parent) {
  std::string suffix;
  for (char c : path) suffix += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return script_module(gm, "__torch__.qfx.ExportedModule_" + suffix, parent.pointwise_as_linear())._ivalue();
}

}  // namespace detail

namespace {

/// The node a TorchScript traceback points at: the exported forward writes
/// each node as `name = ...`, and the first `<--- HERE` marks the statement
/// of the root forward that failed.
std::string failing_node(const std::string& message) {
  std::istringstream lines(message);
  std::string line, previous;
  while (std::getline(lines, line)) {
    if (line.find("<--- HERE") != std::string::npos) break;
    if (line.find_first_not_of(" ~") != std::string::npos) previous = line;
  }
  size_t start = previous.find_first_not_of(' ');
  size_t equals = previous.find(" = ");
  if (start == std::string::npos || equals == std::string::npos) return "";
  std::string name = previous.substr(start, equals - start);
  bool identifier = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
  return identifier ? name : "";
}

/// The line of LibTorch's message that says what failed: the last one after
/// a TorchScript traceback (the exception), else the first.
std::string error_line(const std::string& message) {
  std::string text = message.substr(0, message.find_last_not_of("\n ") + 1);
  if (text.find("<--- HERE") == std::string::npos) return text.substr(0, text.find('\n'));
  size_t newline = text.rfind('\n');
  return newline == std::string::npos ? text : text.substr(newline + 1);
}

/// `inputs` as the forward's schema declares them: a list of tensors read
/// from a torch.save file is a generic list, which a `List[Tensor]`
/// argument refuses (Python's torch.jit converts it the same way).
std::vector<c10::IValue> as_declared(const torch::jit::Module& module, std::vector<c10::IValue> inputs) {
  const std::vector<c10::Argument>& args = module.get_method("forward").function().getSchema().arguments();
  for (size_t i = 0; i < inputs.size() && i + 1 < args.size(); ++i) {
    auto list = args[i + 1].type()->cast<c10::ListType>();
    if (list == nullptr || !list->getElementType()->isSubtypeOf(*c10::TensorType::get()) || !inputs[i].isList()) {
      continue;
    }
    c10::List<at::Tensor> tensors;
    bool all_tensors = true;
    for (const c10::IValue& item : inputs[i].toListRef()) {
      all_tensors = all_tensors && item.isTensor();
      if (all_tensors) tensors.push_back(item.toTensor());
    }
    if (all_tensors) inputs[i] = tensors;
  }
  return inputs;
}

/// A LibTorch 1.13 kernel that cannot run some shapes a model calibrates on:
/// its message, and what it means.
struct KernelLimit {
  const char* message;
  const char* limit;
};

const KernelLimit kKernelLimits[] = {
    // s3d's classifier: a 1x1x1 conv's output (1, C, 1, 1, 1), then mean over (2, 3, 4)
    {"required rank 5 tensor to use channels_last_3d format",
     "LibTorch 1.13's quantized mean cannot reduce a channels_last_3d tensor whose reduced dimensions are all 1"},
};

std::string kernel_limit_of(const std::string& message) {
  for (const KernelLimit& k : kKernelLimits) {
    if (message.find(k.message) != std::string::npos) return k.limit;
  }
  return "";
}

/// Loads `archive` back and runs it on `inputs`, as a deploying host would.
void check_runs(const std::string& archive, const std::string& path, const std::vector<c10::IValue>& inputs) {
  std::istringstream in(archive);
  torch::jit::Module loaded = torch::jit::load(in);
  detail::StderrCapture log;  // QNNPACK writes its reason there
  try {
    loaded.forward(as_declared(loaded, inputs));
  } catch (const std::exception& e) {
    auto* error = dynamic_cast<const c10::Error*>(&e);
    std::string what = error != nullptr ? error->what_without_backtrace() : e.what();
    std::string node = failing_node(what);
    std::string logged = log.text();
    std::string reason = error_line(logged.empty() ? what : logged);
    throw ExportedRunError(node, kernel_limit_of(what),
                           "export: the model written to '" + path +
                               "' fails when it runs (torch::jit::load, one calibration batch)" +
                               (node.empty() ? "" : " at node %" + node) + ": " + reason);
  }
  std::cerr << log.text();  // what the run wrote, passed on
}

}  // namespace

ExportedRunError::ExportedRunError(std::string node, std::string kernel_limit, const std::string& message)
    : c10::Error(message, ""), node_(std::move(node)), kernel_limit_(std::move(kernel_limit)) {}

void export_torchscript(const ir::GraphModule& gm, const std::string& path, const OutputOptions& options,
                        const TorchScriptOptions& script) {
  check_output(path, options);  // before the work of scripting the module
  torch::jit::Module module = script_module(gm, "__torch__.qfx.ExportedModule", script.pointwise_convs_as_linear);
  std::ostringstream archive;
  try {
    module.save(archive);
  } catch (const c10::Error& e) {  // qnnpack cannot unpack the Conv1d/Conv3d weights it packed
    TORCH_CHECK(false, "export: LibTorch cannot save the packed weights of this engine: ", e.what_without_backtrace(),
                " (export with --engine onednn)");
  }
  if (!script.check_inputs.empty()) check_runs(archive.str(), path, script.check_inputs);
  write_output(path, archive.str(), options);
}

}  // namespace qfx::io
