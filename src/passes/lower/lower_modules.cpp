// lower-to-native, module steps: static weighted reference modules
// (dequantize - ref - quantize), dynamic ones (quantize_per_tensor_dynamic -
// dequantize - ref) and weight-only ones become quantized modules.

#include "lowering.h"

#include "lower_tables.h"

#include "qfx/nn/quantized_rnn.h"

#include <map>
#include <unordered_set>

namespace qfx::passes::detail {

// The matches are found once: a rewrite leaves every later match in place
// except the other quantize nodes of a reference module already lowered,
// which are skipped (a module refused stays a reference module, and its next
// quantize node tries again).
void lower_static_weighted_modules(Lowering& l) {
  auto accept = [&l](const ir::Node& n) {
    auto m = l.module(&n);
    return m != nullptr && find_module_lowering(static_module_lowerings(), *m) != nullptr;
  };
  std::vector<StaticMatch> matches;
  std::vector<Lowering::Build> builds;
  for (ir::Node* node : l.gm.graph().nodes()) {
    std::optional<StaticMatch> m = match_static(l, node, accept, {0});
    if (!m) continue;
    const ModuleLowering* row = find_module_lowering(static_module_lowerings(), *l.module(m->ref));
    matches.push_back(*m);
    builds.push_back({m->ref, row->quantized_type, output_qparams(l, *m->q)});
  }
  std::vector<Lowering::Build> plan = builds;
  l.prebuild(std::move(builds));
  std::unordered_set<const ir::Node*> lowered;
  for (size_t i = 0; i < matches.size(); ++i) {
    const StaticMatch& m = matches[i];
    if (lowered.count(m.ref) > 0) continue;
    auto quantized = l.make_quantized(*m.ref, plan[i].type, plan[i].output);
    if (!quantized) continue;
    lowered.insert(m.ref);
    l.swap_in(m.ref->target(), quantized);
    ir::Node* dq = m.ref->args()[0].to_node();
    m.ref->replace_input_with(dq, dq->args()[0].to_node());
    ir::Node* scale = m.q->args()[1].to_node();
    ir::Node* zero_point = m.q->args()[2].to_node();
    m.q->replace_all_uses_with(m.ref);
    l.gm.graph().erase_node(m.q);
    l.gm.graph().erase_node(scale);
    l.gm.graph().erase_node(zero_point);
    l.changed = true;
  }
  l.forget_prebuilt();
}

/// The dynamic module for `node`: an LSTM's own class (nnqd.LSTM.from_reference), the others from the factories.
std::shared_ptr<torch::nn::Module> dynamic_module(Lowering& l, const ir::Node& node, const torch::nn::Module& module,
                                                  const ModuleLowering& row) {
  if (auto* rnn = dynamic_cast<const nn::ReferenceRNNImpl*>(&module)) {
    return nn::DynamicQuantizedRNNImpl::from_reference(*rnn);
  }
  return l.make_quantized(node, row.quantized_type, std::nullopt);
}

// Collect, then rewrite: a module called twice (an RNN cell stepped twice)
// is matched at both calls as the reference module it was before lowering,
// and lowered once.
void lower_dynamic_weighted_modules(Lowering& l) {
  struct Match {
    ir::Node* node;
    std::shared_ptr<torch::nn::Module> module;
    const ModuleLowering* row;
  };
  std::vector<Match> matches;
  for (ir::Node* node : l.gm.graph().nodes()) {
    auto module = l.module(node);
    const ModuleLowering* row = module ? find_module_lowering(dynamic_module_lowerings(), *module) : nullptr;
    if (row != nullptr) matches.push_back({node, module, row});
  }
  std::map<std::string, std::shared_ptr<torch::nn::Module>> lowered;  // by target
  for (const Match& m : matches) {
    ir::Node* node = m.node;
    if (node->args().empty() || !is_dequantize(node->args()[0])) continue;
    ir::Node* dq = node->args()[0].to_node();
    ir::Node* input_q = dq->args()[0].is_node() ? dq->args()[0].to_node() : nullptr;
    if (input_q == nullptr || !is_call(*input_q, ir::Opcode::kCallFunction, "torch.quantize_per_tensor_dynamic")) {
      continue;
    }
    c10::ScalarType compute = input_q->args().at(1).to_dtype();
    if (compute != c10::kQUInt8 && compute != c10::kQInt8 && compute != c10::kHalf) continue;
    std::shared_ptr<torch::nn::Module>& quantized = lowered[node->target()];
    if (!quantized) quantized = dynamic_module(l, *node, *m.module, *m.row);
    if (!quantized) continue;
    l.swap_in(node->target(), quantized);
    node->replace_input_with(dq, input_q->args()[0].to_node());
    l.changed = true;
  }
}

void lower_weight_only_modules(Lowering& l) {
  for (ir::Node* node : l.gm.graph().node_list()) {
    auto module = l.module(node);
    const ModuleLowering* row = module ? find_module_lowering(weight_only_module_lowerings(), *module) : nullptr;
    if (row == nullptr) continue;
    auto quantized = l.make_quantized(*node, row->quantized_type, std::nullopt);
    if (!quantized) continue;
    l.swap_in(node->target(), quantized);
    l.changed = true;
  }
}

}  // namespace qfx::passes::detail
