// fuse: PyTorch's fuse_fx, a rule table (rewrite_rules.h) whose rules are
// the BackendConfig's fusion patterns (configs with a fuser method or a
// fused module), longest first, matched walking the graph from its output;
// a node belongs to the first match that claims it. Then, per match, builds
// the fused module from the matched modules as they were before any fusion
// (the built-in fuser methods as jobs, pass_jobs.h) and puts it at the root
// node's module path; the root node moves to where the pattern's output
// was, takes the extra inputs, and the other matched nodes go away.
//
//   conv -> bn -> relu          =>   conv (ConvBnReLU2d, or Conv2d with bn folded)
//   add(conv(x), y) -> relu     =>   conv(x, y)  (ConvAddReLU2d, onednn)

#include "qfx/backend/backend_registry.h"
#include "qfx/ir/op_names.h"
#include "qfx/ir/graph_module.h"
#include "qfx/passes/pass.h"
#include "passes/config_matches.h"
#include "passes/rewrite_rules.h"
#include "qfx/passes/pass_jobs.h"
#include "qfx/pattern/matcher.h"

#include <torch/nn/modules/activation.h>

namespace qfx::passes {
namespace {

using detail::apply_rules;
using detail::Decline;
using detail::patterns_of;
using detail::RewriteRule;
using detail::RuleMatch;
using detail::RuleRun;
using detail::RuleRunOptions;
using detail::Walk;

/// What the fuser gets for each matched element: the module of a
/// call_module node, a fresh ReLU for `torch.nn.functional.relu` (as
/// PyTorch), else the op's name.
std::vector<backend::FuserPart> fuser_parts(const pattern::PatternMatch& match, const ir::GraphModule& gm,
                                            bool training) {
  std::vector<backend::FuserPart> parts;
  const auto& elements = match.pattern->elements();
  for (size_t i = 0; i < elements.size(); ++i) {
    backend::FuserPart part{nullptr, elements[i].op.name};
    ir::Node* node = match.node(i);
    if (elements[i].op.kind == pattern::OpKind::kModule) {
      part.module = gm.get_submodule(node->target());
    } else if (elements[i].op.name == ir::op::kFunctionalRelu) {
      part.module = std::make_shared<torch::nn::ReLUImpl>();
      part.module->train(training);
    }
    parts.push_back(std::move(part));
  }
  return parts;
}

/// What a fusion takes from the model before any fusion changes it (as
/// PyTorch's fuse reads its named_modules once): its root node and the
/// parts its fuser gets.
struct FusionInput {
  ir::Node* root = nullptr;  // null when the pattern has no call_module root
  std::vector<backend::FuserPart> parts;
};

FusionInput fusion_input(const backend::BackendPatternConfig& config, const pattern::PatternMatch& match,
                         const ir::GraphModule& gm) {
  FusionInput input;
  ir::Node* root = backend::root_node_of(config, match);
  if (root == nullptr || root->op() != ir::Opcode::kCallModule) return input;
  input.root = root;
  input.parts = fuser_parts(match, gm, gm.get_submodule(root->target())->is_training());
  return input;
}

/// The fuse step's context: the config of each rule, the input of each
/// match (read before any fusion), and the fused modules built as jobs
/// (conv-bn folding is most of fuse's time on large graphs).
struct Fusing {
  ir::GraphModule& gm;
  bool is_qat;
  std::vector<const backend::BackendPatternConfig*> configs;
  std::vector<FusionInput> inputs;
  std::vector<size_t> jobs;  // the matches whose fuser method may run beside the rewrite, in order
  std::unique_ptr<JobResults<std::shared_ptr<torch::nn::Module>>> built;
  size_t next_job = 0;

  /// The fused module of `m`, from its parts.
  std::shared_ptr<torch::nn::Module> fused_module(const RuleMatch& m) const {
    const FusionInput& input = inputs[m.index];
    TORCH_CHECK(input.root != nullptr, "fuse: pattern ", configs[m.rule]->pattern().str(), " matched at %",
                m.output()->name(), " has no module to fuse into (its root node must be a call_module node)");
    return backend::fuser_of(*configs[m.rule])(is_qat, input.parts);
  }
};

Decline apply_fusion(Fusing& f, const RuleMatch& m) {
  bool is_job = f.next_job < f.jobs.size() && f.jobs[f.next_job] == m.index;
  std::shared_ptr<torch::nn::Module> fused;
  try {
    fused = is_job ? f.built->take(f.next_job++) : f.fused_module(m);
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, "fuse: %", m.output()->name(), " (", f.configs[m.rule]->pattern().str(),
                "): ", e.what_without_backtrace());
  }
  ir::Node* output = m.output();
  ir::Node* root = f.inputs[m.index].root;
  f.gm.add_submodule(root->target(), std::move(fused));

  std::vector<ir::Argument> args = root->args();
  for (ir::Argument& extra : backend::extra_inputs_of(*f.configs[m.rule], m.match)) args.push_back(std::move(extra));
  if (root != output) {
    output->prepend(root);
    output->replace_all_uses_with(root);
  }
  root->set_args(std::move(args));
  std::vector<ir::Node*> nodes = m.match.op_nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    if (*it != root) f.gm.graph().erase_node(*it);
  }
  return "";
}

/// One rule per fusion config, in matching order.
std::vector<RewriteRule<Fusing>> fusion_rules(const std::vector<const backend::BackendPatternConfig*>& configs) {
  std::vector<RewriteRule<Fusing>> rules;
  for (const auto* config : configs) rules.emplace_back(config->pattern().str(), config->pattern(), apply_fusion);
  return rules;
}

}  // namespace

bool fuse(ir::GraphModule& gm, const FuseOptions& options) {
  Fusing f{gm, options.is_qat, detail::configs_in_match_order(options.backend(), [](const auto& config) {
             return !config.fuser_method().empty() || !config.fused_module().empty();
           })};
  std::vector<RewriteRule<Fusing>> rules = fusion_rules(f.configs);
  RuleRunOptions run_options{Walk::kBackward, /*claim=*/true, /*recheck=*/false, options.explain != nullptr};
  RuleRun run(patterns_of(rules), gm, run_options);
  const backend::BackendRegistry& registry = backend::BackendRegistry::instance();
  for (const RuleMatch& m : run.matches()) {
    f.inputs.push_back(fusion_input(*f.configs[m.rule], m.match, gm));
    const std::string& method = f.configs[m.rule]->fuser_method();
    if (f.inputs.back().root != nullptr && !method.empty() && registry.fuser_method_is_concurrent(method)) {
      f.jobs.push_back(m.index);
    }
  }
  f.built = std::make_unique<JobResults<std::shared_ptr<torch::nn::Module>>>(
      options.jobs, f.jobs.size(), [&f, &run](size_t k) {
        return f.fused_module(run.matches()[f.jobs[k]]);
      });  // the others are built as the rewrite reaches them
  apply_rules(run, rules, f);
  if (options.explain != nullptr) run.explain("fused", *options.explain);
  // As PyTorch's fuse returns a new GraphModule: a fresh namespace (names of
  // removed nodes are free again), the module tree rebuilt from the graph.
  gm.set_graph(gm.graph().clone());
  gm.rebuild_module_tree();
  gm.set_class_name("GraphModule");
  return !run.matches().empty();
}

}  // namespace qfx::passes
