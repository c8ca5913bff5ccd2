// swap-qat-modules: prepare_qat_fx's module swap. Each module with a
// qconfig whose type the BackendConfig maps to a QAT module (a pattern of
// that one module type with `qat_module` set) becomes that QAT module, its
// weight fake-quantized by the qconfig's weight observer.

#include "qconfig_resolution.h"

#include "qfx/ir/graph_module.h"
#include "qfx/ir/module_registry.h"
#include "qfx/nn/qat.h"
#include "qfx/passes/pass.h"

namespace qfx::passes {
namespace {

/// The QAT class the backend maps `type` to, or "" (PyTorch's get_module_to_qat_module).
std::string qat_type_for(const backend::BackendConfig& backend, const std::string& type) {
  const backend::BackendPatternConfig* config = backend.module_config(type);
  return config != nullptr ? config->qat_module() : "";
}

}  // namespace

bool swap_qat_modules(ir::GraphModule& gm, const SwapQatModulesOptions& options) {
  TORCH_CHECK(options.qconfig_mapping, "swap-qat-modules needs a QConfigMapping");
  auto qconfigs = detail::node_qconfigs(gm, *options.qconfig_mapping);
  bool changed = false;
  for (const ir::Node* node : gm.graph().nodes()) {
    if (node->op() != ir::Opcode::kCallModule) continue;
    auto it = qconfigs.find(node);
    if (it == qconfigs.end() || !it->second) continue;
    auto module = gm.get_submodule(node->target());
    std::string qat_type = qat_type_for(options.backend(), ir::module_type_name(*module));
    if (qat_type.empty()) continue;
    gm.add_submodule(node->target(), nn::qat_from_float(qat_type, module, *it->second));
    changed = true;
  }
  return changed;
}

}  // namespace qfx::passes
