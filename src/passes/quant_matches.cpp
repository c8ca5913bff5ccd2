// find_quant_matches: PyTorch 1.13's find_matches for the quantization
// patterns of a BackendConfig, and its helpers for counting tensor arguments.

#include "quant_matches.h"
#include "qfx/ir/op_names.h"

#include "qfx/backend/backend_registry.h"
#include "config_matches.h"
#include "qfx/passes/prepare_state.h"
#include "qfx/quant/observer_base.h"

namespace qfx::passes::detail {
namespace {

bool node_has_no_tensors(const ir::Node& node, const ir::GraphModule& gm,
                         std::unordered_map<const ir::Node*, bool>& cache) {
  switch (node.op()) {
    case ir::Opcode::kPlaceholder:
    case ir::Opcode::kGetAttr: return false;
    case ir::Opcode::kCallModule:
      // an observer passes its input on; any other module makes tensors
      return is_observer_node(node, gm) && has_no_tensors(node.args().at(0), gm, cache);
    default: break;
  }
  if (node.op() == ir::Opcode::kCallFunction && node.target() == ir::op::kGetitem) {
    return has_no_tensors(node.args().at(0), gm, cache);
  }
  if (node.op() == ir::Opcode::kCallMethod && node.target() == "size") return true;
  if (node.op() == ir::Opcode::kCallFunction && node.target() == "builtins.getattr" && node.args().size() > 1 &&
      node.args()[1].kind() == ir::Argument::Kind::kString &&
      (node.args()[1].to_string() == "shape" || node.args()[1].to_string() == "ndim")) {
    return true;
  }
  for (const ir::Argument& arg : node.args()) {
    if (arg.kind() == ir::Argument::Kind::kList) {
      for (const ir::Argument& item : arg.items()) {
        if (item.is_node() && !has_no_tensors(item, gm, cache)) return false;
      }
    } else if (arg.is_node() && !has_no_tensors(arg, gm, cache)) {
      return false;
    }
  }
  return true;
}

/// How many of the root node's positional arguments carry tensors ("x + y"
/// against "x + 2").
size_t num_tensor_args(const ir::Node& root, const ir::GraphModule& gm) {
  std::unordered_map<const ir::Node*, bool> cache;
  size_t count = 0;
  for (const ir::Argument& arg : root.args()) {
    if (arg.is_node() && !has_no_tensors(arg, gm, cache)) ++count;
  }
  return count;
}

backend::ObservationType observation_type_of(const backend::BackendPatternConfig& config, const ir::Node& root,
                                             const ir::GraphModule& gm) {
  const auto& by_count = config.num_tensor_args_to_observation_type();
  if (by_count.empty()) return config.observation_type();
  size_t count = num_tensor_args(root, gm);
  auto it = by_count.find(static_cast<int64_t>(count));
  TORCH_CHECK(it != by_count.end(), "pattern ", config.pattern().str(), " at %", root.name(),
              ": its BackendPatternConfig gives no observation type for ", count, " tensor arguments");
  return it->second;
}

std::shared_ptr<QuantMatch> make_match(const backend::BackendPatternConfig& config, pattern::PatternMatch match,
                                       ir::Node& last, const ir::GraphModule& gm) {
  auto result = std::make_shared<QuantMatch>();
  result->config = &config;
  result->last = &last;
  result->root = backend::root_node_of(config, match);
  TORCH_CHECK(result->root != nullptr, "pattern ", config.pattern().str(), " at %", last.name(),
              ": its root-node getter gave no node");
  result->observation_type = observation_type_of(config, *result->root, gm);
  result->nodes = match.op_nodes();
  result->match = std::move(match);
  return result;
}

}  // namespace

bool has_no_tensors(const ir::Argument& arg, const ir::GraphModule& gm,
                    std::unordered_map<const ir::Node*, bool>& cache) {
  if (!arg.is_node()) return true;
  const ir::Node* node = arg.to_node();
  auto it = cache.find(node);
  if (it != cache.end()) return it->second;
  bool result = node_has_no_tensors(*node, gm, cache);
  cache[node] = result;
  return result;
}

QuantMatches find_quant_matches(const ir::GraphModule& gm, const backend::BackendConfig& backend) {
  std::vector<const backend::BackendPatternConfig*> configs = configs_in_match_order(backend);
  QuantMatches matches;
  std::vector<ir::Node*> nodes = gm.graph().node_list();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    if (matches.count(*it) > 0) continue;
    if (auto match = first_match(configs, **it, gm)) {
      std::shared_ptr<const QuantMatch> result = make_match(*match->first, std::move(match->second), **it, gm);
      for (ir::Node* node : result->nodes) matches[node] = result;
    }
  }
  return matches;
}

}  // namespace qfx::passes::detail
