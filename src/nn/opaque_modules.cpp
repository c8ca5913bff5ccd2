// ScriptModuleImpl and NestedGraphModuleImpl, and their registry rows.

#include "qfx/nn/opaque_modules.h"

#include "module_kinds.h"

#include "qfx/ir/interpreter.h"

#include <torch/script.h>

namespace qfx::nn {

ScriptModuleImpl::ScriptModuleImpl(const torch::jit::Module& module, std::string python_class)
    : torch::nn::Module(python_class.substr(python_class.rfind('.') + 1)),
      module_(std::make_shared<torch::jit::Module>(module)),
      python_class_(std::move(python_class)) {
  torch::nn::Module::train(module.is_training());
}

ScriptModuleImpl::ScriptModuleImpl(const ScriptModuleImpl& other, DeepCopy)
    : ScriptModuleImpl(other.module_->deepcopy(), other.python_class_) {}

std::shared_ptr<torch::nn::Module> ScriptModuleImpl::clone(const c10::optional<torch::Device>& device) const {
  return clone_through<ScriptModuleImpl>(*this, device);
}

void ScriptModuleImpl::train(bool on) {
  torch::nn::Module::train(on);
  module_->train(on);
}

c10::IValue ScriptModuleImpl::forward(std::vector<c10::IValue> inputs) { return module_->forward(std::move(inputs)); }

NestedGraphModuleImpl::NestedGraphModuleImpl(std::unique_ptr<ir::GraphModule> graph_module, std::string python_class)
    : torch::nn::Module("GraphModule"),
      graph_module_(std::move(graph_module)),
      python_class_(std::move(python_class)) {}

NestedGraphModuleImpl::NestedGraphModuleImpl(const NestedGraphModuleImpl& other, DeepCopy)
    : NestedGraphModuleImpl(other.graph_module_->deep_copy(), other.python_class_) {
  input_quantized_indexes = other.input_quantized_indexes;
  output_quantized_indexes = other.output_quantized_indexes;
  train(other.is_training());
}

std::shared_ptr<torch::nn::Module> NestedGraphModuleImpl::clone(const c10::optional<torch::Device>& device) const {
  return clone_through<NestedGraphModuleImpl>(*this, device);
}

c10::IValue NestedGraphModuleImpl::forward(std::vector<c10::IValue> inputs) {
  return ir::Interpreter(*graph_module_).run(inputs);
}

std::string python_class_of(const torch::nn::Module& module) {
  if (auto* script = dynamic_cast<const ScriptModuleImpl*>(&module)) return script->python_class();
  if (auto* nested = dynamic_cast<const NestedGraphModuleImpl*>(&module)) return nested->python_class();
  return ir::module_type_name(module);
}

bool class_name_matches(const std::string& python_class, const std::string& wanted) {
  if (python_class == wanted) return true;
  return python_class.size() > wanted.size() &&
         python_class.compare(python_class.size() - wanted.size(), wanted.size(), wanted) == 0 &&
         python_class[python_class.size() - wanted.size() - 1] == '.';
}

namespace {

/// The nested module's tree as its children, as Python prints a GraphModule child.
std::string nested_children(const torch::nn::Module& m) {
  std::string tree = ir::module_repr(detail::as<NestedGraphModuleImpl>(m).graph_module().root());
  size_t first = tree.find('\n');
  if (first == std::string::npos) return "";  // `GraphModule()`
  std::string body = tree.substr(first + 1, tree.rfind('\n') - first - 1), out;
  size_t start = 0;
  while (start < body.size()) {  // undo one level of indentation
    size_t end = std::min(body.find('\n', start), body.size());
    std::string line = body.substr(start, end - start);
    if (line.rfind("  ", 0) == 0) line = line.substr(2);
    out += (out.empty() ? "" : "\n") + line;
    start = end + 1;
  }
  return out;
}

}  // namespace

void register_opaque_kinds() {
  ir::ModuleRegistry::instance().add({"torch.jit.ScriptModule", typeid(ScriptModuleImpl),
                                      [](torch::nn::Module& m, std::vector<c10::IValue>& in) {
                                        return dynamic_cast<ScriptModuleImpl&>(m).forward(in);
                                      },
                                      nullptr, "", /*named_by_instance=*/true});
  ir::ModuleRegistry::instance().add({"torch.fx.GraphModule", typeid(NestedGraphModuleImpl),
                                      [](torch::nn::Module& m, std::vector<c10::IValue>& in) {
                                        return dynamic_cast<NestedGraphModuleImpl&>(m).forward(in);
                                      },
                                      nested_children, "GraphModule"});
}

}  // namespace qfx::nn
