// node_qconfigs: the QConfigMapping updated for fused and QAT module types.

#include "qconfig_resolution.h"

#include "qfx/ir/module_registry.h"
#include "qfx/nn/intrinsic.h"
#include "qfx/nn/qat.h"

namespace qfx::passes::detail {
namespace {

/// The module types a fused or QAT module was made from, or empty.
std::vector<std::string> part_types(const torch::nn::Module& module) {
  std::vector<std::string> types;
  if (auto* fused = dynamic_cast<const nn::FusedModuleImpl*>(&module)) {
    for (const auto& part : fused->modules()) types.push_back(ir::module_type_name(*part));
  } else if (auto* qat = dynamic_cast<const nn::QatModuleImpl*>(&module)) {
    types = qat->source_types();
  }
  return types;
}

quant::QConfigMapping with_composed_types(const ir::GraphModule& gm, quant::QConfigMapping mapping) {
  if (mapping.object_type_qconfigs().empty()) return mapping;
  for (const ir::Node* node : gm.graph().nodes()) {
    if (node->op() != ir::Opcode::kCallModule) continue;
    auto module = gm.get_submodule(node->target());
    std::vector<std::string> parts = part_types(*module);
    if (parts.empty()) continue;
    quant::QConfigAny qconfig = mapping.object_type_qconfig(parts[0], std::nullopt);
    for (size_t i = 1; i < parts.size(); ++i) {
      TORCH_CHECK(mapping.object_type_qconfig(parts[i], std::nullopt) == qconfig,
                  "During fusion, we need to specify the same qconfigs for all module types in ",
                  ir::module_type_name(*module), " offending type: ", parts[i]);
    }
    if (qconfig) mapping.set_object_type(ir::module_type_name(*module), qconfig);
  }
  return mapping;
}

}  // namespace

std::unordered_map<const ir::Node*, quant::QConfigAny> node_qconfigs(const ir::GraphModule& gm,
                                                                     const quant::QConfigMapping& mapping) {
  return quant::generate_qconfig_map(gm, with_composed_types(gm, mapping));
}

}  // namespace qfx::passes::detail
