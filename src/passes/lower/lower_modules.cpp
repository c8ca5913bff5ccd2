// lower-to-native, module steps: static weighted reference modules
// (dequantize - ref - quantize), dynamic ones (quantize_per_tensor_dynamic -
// dequantize - ref) and weight-only ones become quantized modules.

#include "lowering.h"

#include "lower_tables.h"
#include "lower_terms.h"

#include "qfx/nn/quantized_rnn.h"

#include <map>
#include <unordered_set>

namespace qfx::passes::detail {
namespace {

const char* const kStaticRef = "a reference module lowered statically";
const char* const kDynamicRef = "a reference module lowered dynamically";
const char* const kWeightOnlyRef = "a reference module lowered weight-only";

/// The static step's context: the module each match builds, decided when
/// the matches were collected (a module called twice is lowered at each
/// call, from the reference module, as PyTorch), and the nodes lowered.
struct StaticModules {
  Lowering& l;
  std::vector<Lowering::Build> builds;  // by match index
  std::unordered_set<const ir::Node*> lowered;
};

/// The quantized module replaces the reference one, which reads the
/// dequantize node's input; the quantize node and its qparams go (a relu
/// between them goes with it, as in PyTorch).
Decline lower_static_module(StaticModules& s, const RuleMatch& m) {
  ir::Node* q = m.output();
  ir::Node* ref = m.anchor_node();
  if (node_has_none_qconfig(*ref)) return "its qconfig is None";
  if (s.lowered.count(ref) > 0) return "lowered at another quantize node";
  if (std::string why = read_as_float(*ref, *q); !why.empty()) return why;
  const Lowering::Build& build = s.builds[m.index];
  auto quantized = s.l.make_quantized(*ref, build.type, build.output);
  if (!quantized) return s.l.refusals.at(ref);
  s.lowered.insert(ref);
  s.l.swap_in(ref->target(), quantized);
  ir::Node* dq = ref->args()[0].to_node();
  ref->replace_input_with(dq, dq->args()[0].to_node());
  ir::Node* scale = q->args()[1].to_node();
  ir::Node* zero_point = q->args()[2].to_node();
  q->replace_all_uses_with(ref);
  s.l.erase(q);
  s.l.erase(scale);
  s.l.erase(zero_point);
  return "";
}

const std::vector<RewriteRule<StaticModules>>& static_module_rules() {
  static const std::vector<RewriteRule<StaticModules>> rules = [] {
    using namespace terms;
    Term ref = module_in(kStaticRef, static_module_lowerings()).of({dequantize()}).and_more();
    return std::vector<RewriteRule<StaticModules>>{
        // dq -> ref module -> relu -> q  =>  quantized module (relu and q dropped)
        {"static weighted module + relu", quantize(relu(ref)), kStaticRef, lower_static_module},
        // dq -> ref module -> q  =>  quantized module
        {"static weighted module", quantize(ref), kStaticRef, lower_static_module},
    };
  }();
  return rules;
}

/// The module each match of the static rules builds.
std::vector<Lowering::Build> static_builds(const Lowering& l, const RuleRun& run) {
  std::vector<Lowering::Build> builds;
  for (const RuleMatch& m : run.matches()) {
    ir::Node* ref = m.anchor_node();
    const ModuleLowering* row = find_module_lowering(static_module_lowerings(), *l.module(ref));
    builds.push_back({ref, row->quantized_type, output_qparams(l, *m.output())});
  }
  return builds;
}

/// The dynamic step's context: the module each target was lowered to (an
/// RNN cell stepped twice is matched at both calls and lowered once).
struct DynamicModules {
  Lowering& l;
  std::map<std::string, std::shared_ptr<torch::nn::Module>> lowered;
};

/// The dynamic module for `node`: an LSTM's own class (nnqd.LSTM.from_reference), the others from the factories.
std::shared_ptr<torch::nn::Module> dynamic_module(Lowering& l, const ir::Node& node) {
  auto module = l.module(&node);
  if (auto* rnn = dynamic_cast<const nn::ReferenceRNNImpl*>(module.get())) {
    return nn::DynamicQuantizedRNNImpl::from_reference(*rnn);
  }
  const ModuleLowering* row = find_module_lowering(dynamic_module_lowerings(), *module);
  return l.make_quantized(node, row->quantized_type, std::nullopt);
}

/// The dynamic module replaces the reference one, which reads the input of
/// quantize_per_tensor_dynamic.
Decline lower_dynamic_module(DynamicModules& d, const RuleMatch& m) {
  ir::Node* node = m.anchor_node();
  ir::Node* dq = node->args()[0].to_node();
  ir::Node* input_q = dq->args()[0].to_node();
  c10::ScalarType compute = input_q->args().at(1).to_dtype();
  if (compute != c10::kQUInt8 && compute != c10::kQInt8 && compute != c10::kHalf) {
    return std::string("its input is quantized dynamically to ") + c10::toString(compute);
  }
  std::shared_ptr<torch::nn::Module>& quantized = d.lowered[node->target()];
  if (!quantized) quantized = dynamic_module(d.l, *node);
  if (!quantized) return d.l.refusals.at(node);
  d.l.swap_in(node->target(), quantized);
  node->replace_input_with(dq, input_q->args()[0].to_node());
  return "";
}

const std::vector<RewriteRule<DynamicModules>>& dynamic_module_rules() {
  using namespace terms;
  static const std::vector<RewriteRule<DynamicModules>> rules = {
      // q_dynamic -> dq -> ref module  =>  dynamic quantized module
      {"dynamic weighted module",
       module_in(kDynamicRef, dynamic_module_lowerings()).of({dequantize(quantize_dynamic())}).and_more(), kDynamicRef,
       lower_dynamic_module},
  };
  return rules;
}

Decline lower_weight_only_module(Lowering& l, const RuleMatch& m) {
  ir::Node* node = m.anchor_node();
  const ModuleLowering* row = find_module_lowering(weight_only_module_lowerings(), *l.module(node));
  auto quantized = l.make_quantized(*node, row->quantized_type, std::nullopt);
  if (!quantized) return l.refusals.at(node);
  l.swap_in(node->target(), quantized);
  return "";
}

const std::vector<RewriteRule<Lowering>>& weight_only_module_rules() {
  using namespace terms;
  static const std::vector<RewriteRule<Lowering>> rules = {
      // ref Embedding(Bag)  =>  quantized Embedding(Bag)
      {"weight-only module", module_in(kWeightOnlyRef, weight_only_module_lowerings()), kWeightOnlyRef,
       lower_weight_only_module},
  };
  return rules;
}

}  // namespace

// Not re-checked: the matches are taken as collected, each building its
// module from the reference module (started as jobs, as weight
// quantization and prepacking are most of convert's time); the other
// quantize nodes of a reference node already lowered are skipped (a module
// refused stays a reference module, and its next quantize node tries again).
void lower_static_weighted_modules(Lowering& l) {
  StaticModules s{l, {}, {}};
  RuleRunOptions options;
  options.recheck = false;
  l.run_rules(static_module_rules(), s, options, [&](const RuleRun& run) {
    s.builds = static_builds(l, run);
    l.prebuild(s.builds);
  });
  l.forget_prebuilt();
}

// Not re-checked: a module called twice is matched at both calls as the
// reference module it was before lowering.
void lower_dynamic_weighted_modules(Lowering& l) {
  DynamicModules d{l, {}};
  RuleRunOptions options;
  options.recheck = false;
  l.run_rules(dynamic_module_rules(), d, options);
}

void lower_weight_only_modules(Lowering& l) { l.run_rules(weight_only_module_rules(), l, {}); }

}  // namespace qfx::passes::detail
