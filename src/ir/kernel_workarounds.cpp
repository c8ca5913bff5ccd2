// The workarounds of LibTorch 1.13's wrong quantized kernels, one switch for
// the interpreter and the export.

#include "qfx/ir/kernel_workarounds.h"

#include "qfx/ir/graph_module.h"
#include "qfx/ir/module_registry.h"

#include <ATen/Context.h>

#include <atomic>
#include <set>
#include <utility>

namespace qfx::ir {
namespace {

std::atomic<bool>& enabled() {
  static std::atomic<bool> on{true};
  return on;
}

bool on_qnnpack() { return kernel_workarounds() && at::globalContext().qEngine() == at::QEngine::QNNPACK; }

/// The clamp family by opcode and target (a call_module's: its module type).
const std::set<std::pair<Opcode, std::string>>& clamp_family() {
  static const std::set<std::pair<Opcode, std::string>> kFamily = {
      {Opcode::kCallFunction, "torch.nn.functional.relu6"},
      {Opcode::kCallFunction, "torch.nn.functional.hardtanh"},
      {Opcode::kCallFunction, "torch.clamp"},
      {Opcode::kCallMethod, "clamp"},
      {Opcode::kCallModule, "torch.nn.ReLU6"},
      {Opcode::kCallModule, "torch.nn.Hardtanh"},
  };
  return kFamily;
}

/// `x.unsqueeze(-1).unsqueeze(-1).transpose(1, -1)`, or its inverse.
at::Tensor memory_order_view(const at::Tensor& x) { return x.unsqueeze(-1).unsqueeze(-1).transpose(1, -1); }
at::Tensor logical_view(const at::Tensor& x) { return x.transpose(1, -1).squeeze(-1).squeeze(-1); }

}  // namespace

bool kernel_workarounds() { return enabled().load(); }

void set_kernel_workarounds(bool on) { enabled().store(on); }

at::Tensor clamp_in_memory_order(const at::Tensor& x, const std::function<at::Tensor(const at::Tensor&)>& clamp) {
  if (!x.is_quantized() || !on_qnnpack()) return clamp(x);
  return logical_view(clamp(memory_order_view(x)));
}

bool is_clamp_family(const GraphModule& gm, const Node& node) {
  if (node.op() == Opcode::kCallModule)
    return clamp_family().count({node.op(), module_type_name(*gm.get_submodule(node.target()))}) != 0;
  return clamp_family().count({node.op(), node.target()}) != 0;
}

void clamp_in_memory_order(Graph& graph, Node& node) {
  if (!on_qnnpack() || node.args().empty() || !node.args()[0].is_node()) return;
  Node* input = node.args()[0].to_node();
  Node* view = nullptr;
  {
    auto guard = graph.inserting_before(&node);
    view = graph.call_method("unsqueeze", {input, int64_t{-1}});
    view = graph.call_method("unsqueeze", {view, int64_t{-1}});
    view = graph.call_method("transpose", {view, int64_t{1}, int64_t{-1}});
  }
  node.replace_input_with(input, view);
  auto guard = graph.inserting_after(&node);
  Node* back = graph.call_method("transpose", {&node, int64_t{1}, int64_t{-1}});
  Node* logical = graph.call_method("squeeze", {graph.call_method("squeeze", {back, int64_t{-1}}), int64_t{-1}});
  node.replace_all_uses_with(logical, [&](Node* user) { return user != back; });
}

}  // namespace qfx::ir
