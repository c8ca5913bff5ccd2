// configs_in_match_order, first_match: the pattern search fuse and
// insert-observers share.

#include "config_matches.h"

#include "qfx/pattern/matcher.h"

namespace qfx::passes::detail {

std::vector<const backend::BackendPatternConfig*> configs_in_match_order(
    const backend::BackendConfig& backend, const std::function<bool(const backend::BackendPatternConfig&)>& keep) {
  std::vector<const backend::BackendPatternConfig*> configs;
  for (const backend::BackendPatternConfig& config : backend.configs()) {
    if (!keep || keep(config)) configs.push_back(&config);
  }
  std::vector<const pattern::Pattern*> patterns;
  for (const auto* config : configs) patterns.push_back(&config->pattern());
  std::vector<const backend::BackendPatternConfig*> sorted;
  for (size_t index : pattern::match_order(patterns)) sorted.push_back(configs[index]);
  return sorted;
}

std::optional<std::pair<const backend::BackendPatternConfig*, pattern::PatternMatch>> first_match(
    const std::vector<const backend::BackendPatternConfig*>& configs, ir::Node& node, const ir::GraphModule& gm) {
  const std::string op_name = pattern::op_name_of(node, gm);
  for (const backend::BackendPatternConfig* config : configs) {
    const pattern::Pattern& candidate = config->pattern();
    if (candidate.empty() || !pattern::op_matches_named(candidate.root().op, node, op_name)) continue;
    if (std::optional<pattern::PatternMatch> match = pattern::match_at(candidate, node, gm)) {
      return std::make_pair(config, std::move(*match));
    }
  }
  return std::nullopt;
}

}  // namespace qfx::passes::detail
