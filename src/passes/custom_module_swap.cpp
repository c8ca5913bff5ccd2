// Custom module class lookups shared by insert-observers and convert-to-reference.

#include "custom_module_swap.h"

#include "qfx/nn/opaque_modules.h"

#include <c10/util/Exception.h>

namespace qfx::passes::detail {
namespace {

/// PyTorch's get_quant_type.
std::string quant_type_of(const quant::QConfig& qconfig) {
  if (quant::activation_is_dynamically_quantized(qconfig)) return "dynamic";
  if (quant::activation_is_statically_quantized(qconfig)) return "static";
  return "weight_only";
}

}  // namespace

std::shared_ptr<torch::nn::Module> custom_module_at(const ir::Node& node, const ir::GraphModule& gm,
                                                    const CustomModuleMapping& mapping) {
  if (node.op() != ir::Opcode::kCallModule || mapping.empty()) return nullptr;
  std::shared_ptr<torch::nn::Module> module = gm.get_submodule(node.target());
  std::string python_class = nn::python_class_of(*module);
  for (const auto& [quant_type, classes] : mapping) {
    for (const auto& entry : classes) {
      if (nn::class_name_matches(python_class, entry.first)) return module;
    }
  }
  return nullptr;
}

const nn::CustomModuleClass& swapped_class(const ir::Node& node, const torch::nn::Module& module,
                                           const CustomModuleMapping& mapping, const quant::QConfig& qconfig) {
  std::string python_class = nn::python_class_of(module);
  std::string quant_type = quant_type_of(qconfig);
  auto classes = mapping.find(quant_type);
  std::string target;
  if (classes != mapping.end()) {
    for (const auto& [from, to] : classes->second) {
      if (nn::class_name_matches(python_class, from)) target = to;
    }
  }
  TORCH_CHECK(!target.empty(), "%", node.name(), " (", python_class, "): the custom module mapping has no ", quant_type,
              " entry for this class");
  const nn::CustomModuleClass* found = nn::find_custom_module_class(target);
  TORCH_CHECK(found != nullptr, "%", node.name(), ": custom module class '", target,
              "' is not registered (qfx::nn::register_custom_module_class)");
  return *found;
}

}  // namespace qfx::passes::detail
