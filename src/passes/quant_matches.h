#pragma once
// The quantization patterns a graph's nodes belong to, as PyTorch's
// find_matches (fx/match_utils.py): every BackendConfig pattern, longest
// first, from the graph's output backwards. Internal to the passes.

#include "qfx/backend/backend_config.h"
#include "qfx/ir/graph_module.h"
#include "qfx/pattern/pattern.h"

#include <memory>
#include <unordered_map>
#include <vector>

namespace qfx::passes::detail {

/// One match of a quantization pattern (PyTorch's match tuple and its
/// ConfigurableQuantizeHandler).
struct QuantMatch {
  const backend::BackendPatternConfig* config;  ///< null for a standalone module's call
  pattern::PatternMatch match;
  ir::Node* root;                             ///< the pattern's input node (root-node getter, or PyTorch's default)
  ir::Node* last;                             ///< the pattern's output node
  backend::ObservationType observation_type;  ///< after num_tensor_args_to_observation_type
  std::vector<ir::Node*> nodes;               ///< the matched op nodes

  /// OUTPUT_SHARE_OBSERVER_WITH_INPUT (PyTorch's is_general_tensor_value_op).
  bool shares_observer() const {
    return observation_type == backend::ObservationType::OUTPUT_SHARE_OBSERVER_WITH_INPUT;
  }
};

/// The match of every matched node.
using QuantMatches = std::unordered_map<const ir::Node*, std::shared_ptr<const QuantMatch>>;

QuantMatches find_quant_matches(const ir::GraphModule& gm, const backend::BackendConfig& backend);

/// PyTorch's all_node_args_have_no_tensors: true when `arg` is known not to
/// carry a tensor (a literal, `x.size()`, ...). Not exact, as in PyTorch.
bool has_no_tensors(const ir::Argument& arg, const ir::GraphModule& gm,
                    std::unordered_map<const ir::Node*, bool>& cache);

}  // namespace qfx::passes::detail
