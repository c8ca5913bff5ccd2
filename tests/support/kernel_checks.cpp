#include "kernel_checks.h"

#include "qfx/accuracy/kernel_gaps.h"
#include "qfx/ir/kernel_workarounds.h"
#include "qfx/ir/module_registry.h"

#include <ATen/Context.h>
#include <gtest/gtest.h>

namespace qfx::test {
namespace {

/// A convolution or a linear of `reference` (a module or a function).
bool conv_or_linear(const ir::GraphModule& reference, const KernelGap& gap) {
  const ir::Node* node = reference.graph().find_node(gap.node);
  std::string kind = gap.target;
  if (node != nullptr && node->op() == ir::Opcode::kCallModule)
    kind = ir::module_type_name(*reference.get_submodule(node->target()));
  return kind.find("onv") != std::string::npos || kind.find("inear") != std::string::npos;
}

}  // namespace

bool engine_saturates() { return at::globalContext().qEngine() == at::QEngine::ONEDNN && ir::onednn_saturates(); }

void expect_kernel_gaps_within_rounding(const ir::GraphModule& reference, const ir::GraphModule& lowered,
                                        const std::vector<c10::IValue>& inputs, const std::string& where) {
  for (const KernelGap& gap : kernel_gaps(reference, lowered, {inputs})) {
    if (gap.steps <= 1) continue;
    if (engine_saturates() && conv_or_linear(reference, gap)) continue;
    ADD_FAILURE() << where << ": " << gap.node << " (" << gap.target << ") is " << gap.steps
                  << " steps from its reference";
  }
}

}  // namespace qfx::test
