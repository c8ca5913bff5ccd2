// fuse: PyTorch's fuse_fx. Finds the BackendConfig's fusion patterns (configs
// with a fuser method or a fused module), longest first, walking the graph
// from its output; a node belongs to the first match that claims it. Then,
// per match, builds the fused module from the matched modules as they were
// before any fusion (the built-in fuser methods as jobs, pass_jobs.h) and puts it
// at the root node's module path; the root node moves to where the
// pattern's output was, takes the extra inputs, and the other matched nodes
// go away.
//
//   conv -> bn -> relu          =>   conv (ConvBnReLU2d, or Conv2d with bn folded)
//   add(conv(x), y) -> relu     =>   conv(x, y)  (ConvAddReLU2d, onednn)

#include "qfx/backend/backend_registry.h"
#include "qfx/ir/graph_module.h"
#include "qfx/passes/pass.h"
#include "passes/config_matches.h"
#include "qfx/passes/pass_jobs.h"
#include "qfx/pattern/matcher.h"

#include <ostream>

#include <torch/nn/modules/activation.h>

#include <unordered_set>

namespace qfx::passes {
namespace {

struct FusionMatch {
  const backend::BackendPatternConfig* config;
  pattern::PatternMatch match;
};

/// For --explain: why each fusion pattern whose output op `node` runs did
/// not match there.
void explain_declined(const std::vector<const backend::BackendPatternConfig*>& configs, ir::Node& node,
                      const ir::GraphModule& gm, std::ostream& explain) {
  const std::string op_name = pattern::op_name_of(node, gm);
  for (const backend::BackendPatternConfig* config : configs) {
    const pattern::Pattern& candidate = config->pattern();
    if (candidate.empty() || !pattern::op_matches_named(candidate.root().op, node, op_name)) continue;
    explain << "%" << node.name() << " not fused as " << candidate.str() << ": "
            << pattern::why_no_match(candidate, node, gm) << "\n";
  }
}

/// Matches, collected from the graph's output backwards before anything changes.
std::vector<FusionMatch> find_fusions(ir::GraphModule& gm, const backend::BackendConfig& backend,
                                      std::ostream* explain) {
  std::vector<const backend::BackendPatternConfig*> configs =
      detail::configs_in_match_order(backend, [](const backend::BackendPatternConfig& config) {
        return !config.fuser_method().empty() || !config.fused_module().empty();
      });
  std::unordered_set<const ir::Node*> claimed;
  std::vector<FusionMatch> found;
  std::vector<ir::Node*> nodes = gm.graph().node_list();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    if (claimed.count(*it) > 0) continue;
    if (auto match = detail::first_match(configs, **it, gm)) {
      for (ir::Node* node : match->second.op_nodes()) claimed.insert(node);
      found.push_back({match->first, std::move(match->second)});
    } else if (explain != nullptr) {
      explain_declined(configs, **it, gm, *explain);
    }
  }
  return found;
}

/// What the fuser gets for each matched element: the module of a
/// call_module node, a fresh ReLU for `torch.nn.functional.relu` (as
/// PyTorch), else the op's name.
std::vector<backend::FuserPart> fuser_parts(const FusionMatch& fusion, const ir::GraphModule& gm, bool training) {
  std::vector<backend::FuserPart> parts;
  const auto& elements = fusion.match.pattern->elements();
  for (size_t i = 0; i < elements.size(); ++i) {
    backend::FuserPart part{nullptr, elements[i].op.name};
    ir::Node* node = fusion.match.node(i);
    if (elements[i].op.kind == pattern::OpKind::kModule) {
      part.module = gm.get_submodule(node->target());
    } else if (elements[i].op.name == "torch.nn.functional.relu") {
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

FusionInput fusion_input(const FusionMatch& fusion, const ir::GraphModule& gm) {
  FusionInput input;
  ir::Node* root = backend::root_node_of(*fusion.config, fusion.match);
  if (root == nullptr || root->op() != ir::Opcode::kCallModule) return input;
  input.root = root;
  input.parts = fuser_parts(fusion, gm, gm.get_submodule(root->target())->is_training());
  return input;
}

/// The fusions whose fuser method may run beside the rewrite, in order
/// (conv-bn folding is most of fuse's time on large graphs).
std::vector<size_t> concurrent_fusions(const std::vector<FusionMatch>& fusions,
                                       const std::vector<FusionInput>& inputs) {
  const backend::BackendRegistry& registry = backend::BackendRegistry::instance();
  std::vector<size_t> concurrent;
  for (size_t i = 0; i < fusions.size(); ++i) {
    const std::string& method = fusions[i].config->fuser_method();
    if (inputs[i].root != nullptr && !method.empty() && registry.fuser_method_is_concurrent(method)) {
      concurrent.push_back(i);
    }
  }
  return concurrent;
}

/// The fused module of `fusion`, from its parts.
std::shared_ptr<torch::nn::Module> fused_module(const FusionMatch& fusion, const FusionInput& input, bool is_qat) {
  TORCH_CHECK(input.root != nullptr, "fuse: pattern ", fusion.config->pattern().str(), " matched at %",
              fusion.match.node(fusion.match.values.size() - 1)->name(),
              " has no module to fuse into (its root node must be a call_module node)");
  return backend::fuser_of(*fusion.config)(is_qat, input.parts);
}

void apply_fusion(const FusionMatch& fusion, const FusionInput& input, std::shared_ptr<torch::nn::Module> fused,
                  ir::GraphModule& gm) {
  const backend::BackendPatternConfig& config = *fusion.config;
  ir::Node* output = fusion.match.node(fusion.match.values.size() - 1);
  ir::Node* root = input.root;
  gm.add_submodule(root->target(), std::move(fused));

  std::vector<ir::Argument> args = root->args();
  for (ir::Argument& extra : backend::extra_inputs_of(config, fusion.match)) args.push_back(std::move(extra));
  if (root != output) {
    output->prepend(root);
    output->replace_all_uses_with(root);
  }
  root->set_args(std::move(args));
  std::vector<ir::Node*> nodes = fusion.match.op_nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    if (*it != root) gm.graph().erase_node(*it);
  }
}

}  // namespace

bool fuse(ir::GraphModule& gm, const PassOptions& options) {
  std::vector<FusionMatch> fusions = find_fusions(gm, options.backend(), options.explain);
  std::vector<FusionInput> inputs;
  for (const FusionMatch& fusion : fusions) inputs.push_back(fusion_input(fusion, gm));
  std::vector<size_t> jobs = concurrent_fusions(fusions, inputs);  // the others are built as the rewrite reaches them
  JobResults<std::shared_ptr<torch::nn::Module>> built(options.jobs, jobs.size(), [&](size_t k) {
    return fused_module(fusions[jobs[k]], inputs[jobs[k]], options.is_qat);
  });
  for (size_t i = 0, k = 0; i < fusions.size(); ++i) {
    bool is_job = k < jobs.size() && jobs[k] == i;
    apply_fusion(fusions[i], inputs[i], is_job ? built.take(k++) : fused_module(fusions[i], inputs[i], options.is_qat),
                 gm);
  }
  // As PyTorch's fuse returns a new GraphModule: a fresh namespace (names of
  // removed nodes are free again), the module tree rebuilt from the graph.
  gm.set_graph(gm.graph().clone());
  gm.rebuild_module_tree();
  gm.set_class_name("GraphModule");
  return !fusions.empty();
}

}  // namespace qfx::passes
