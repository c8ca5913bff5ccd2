// lower-to-native: PyTorch 1.13's _lower_to_native_backend on a reference
// model, step by step in its order, then dead code, weight folding, dead
// code, and the module tree rebuilt from the graph.

#include "lowering.h"
#include "qfx/ir/op_names.h"

#include "qfx/nn/opaque_modules.h"

#include "lower_tables.h"
#include "qfx/ir/module_registry.h"
#include "qfx/nn/intrinsic.h"
#include "qfx/nn/reference.h"

#include <ostream>

namespace qfx::passes {
namespace detail {
namespace {

bool holds_reference(const torch::nn::Module& m) {
  auto* fused = dynamic_cast<const nn::FusedModuleImpl*>(&m);
  return dynamic_cast<const nn::ReferenceModuleImpl*>(fused ? fused->module(0).get() : &m) != nullptr;
}

/// Why a reference module or functional op was not lowered, from the
/// pattern around it.
std::string why_not_lowered(const Lowering& l, const ir::Node& node) {
  auto it = l.refusals.find(&node);
  if (it != l.refusals.end()) return it->second;
  if (node_has_none_qconfig(node)) return "its qconfig is None";
  if (auto m = l.module(&node)) {
    bool known = false;
    for (const auto* table : {&static_module_lowerings(), &dynamic_module_lowerings(), &special_module_lowerings()}) {
      known = known || find_module_lowering(*table, *m) != nullptr;
    }
    if (!known) return "PyTorch 1.13 lowers no " + ir::module_type_name(*m);
  }
  if (node.args().empty() || !is_dequantize(node.args()[0])) return "its input is not a dequantize node";
  return "its output does not go to quantize_per_tensor (float16 and other dtypes stay reference)";
}

}  // namespace

void explain_leftovers(const Lowering& l) {
  for (const ir::Node* node : l.gm.graph().nodes()) {
    auto m = l.module(node);
    bool reference_module = m != nullptr && holds_reference(*m);
    bool functional = node->op() == ir::Opcode::kCallFunction &&
                      (function_name(*node) == ir::op::kFunctionalLinear ||
                       function_name(*node).rfind(ir::op::kFunctionalConvPrefix, 0) == 0) &&
                      node->args().size() > 1 && is_dequantize(node->args()[1]);
    bool refused = l.refusals.count(node) > 0;
    if (!reference_module && !functional && !refused) continue;
    *l.options.explain << "%" << node->name() << " stays reference: " << why_not_lowered(l, *node) << "\n";
  }
}

}  // namespace detail

bool lower_to_native(ir::GraphModule& gm, const LowerToNativeOptions& options) {
  for (ir::Node* node : gm.graph().nodes()) {  // standalone modules first, as convert_fx converts them
    if (node->op() != ir::Opcode::kCallModule) continue;
    if (auto* sm = dynamic_cast<nn::NestedGraphModuleImpl*>(gm.get_submodule(node->target()).get())) {
      lower_to_native(sm->graph_module(), options);
      for (auto& retired : sm->graph_module().take_retired()) gm.retire(std::move(retired));
    }
  }
  detail::Lowering l{gm, options};
  detail::lower_static_weighted_modules(l);
  detail::lower_dynamic_weighted_modules(l);
  detail::lower_weight_only_modules(l);
  detail::lower_static_functionals(l);
  detail::lower_dynamic_functionals(l);
  detail::lower_binary_ops(l);
  detail::lower_getattr_metadata(l);
  detail::lower_special_patterns(l);
  gm.graph().eliminate_dead_code();
  detail::fold_weights(l);
  gm.graph().eliminate_dead_code();
  if (options.explain != nullptr) detail::explain_leftovers(l);
  gm.rebuild_module_tree();
  return l.changed;
}

}  // namespace qfx::passes
