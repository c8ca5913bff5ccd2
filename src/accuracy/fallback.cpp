// The accuracy-driven fallback: rank, leave a prefix of the ranking float,
// give back what the budget does not need (fallback.h).

#include "qfx/accuracy/fallback.h"

#include "qfx/ir/node.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

namespace qfx {
namespace {

bool nameable(const QuantizableNode& node) { return node.op == "call_module" || node.op == "call_function"; }

/// A candidate with what ranks it.
struct Candidate {
  QuantizableNode node;
  int64_t kernel_gap = -1;
  double gain = 0;      ///< the score with it alone float, minus the all-quantized score
  double damage = 0;    ///< minus the score with it alone quantized
  size_t priority = 0;  ///< the better of its ranks by gain and by damage (0: first)
};

/// Trials within the budget of trials.
class Search {
 public:
  Search(const QuantizationTrials& trials, const FallbackOptions& options, FallbackResult& result)
      : trials_(trials), options_(options), result_(result), first_(trials.trials_run()) {}

  bool has_budget() const { return options_.max_drop > -INFINITY; }
  bool within(double score) const { return has_budget() && result_.float_score - score <= options_.max_drop; }
  int64_t run() const { return trials_.trials_run() - first_; }
  /// Whether `n` more trials fit; marks the result when they do not.
  bool can_run(int64_t n) {
    if (options_.max_trials < 0 || run() + n <= options_.max_trials) return true;
    result_.out_of_trials = true;
    return false;
  }
  std::vector<double> scores(const std::vector<std::set<std::string>>& sets) { return trials_.scores(sets); }
  double score(const std::set<std::string>& set) { return trials_.score(set); }

 private:
  const QuantizationTrials& trials_;
  const FallbackOptions& options_;
  FallbackResult& result_;
  int64_t first_;
};

/// Orders `candidates` by priority: a node's best rank by gain or by damage.
void set_priorities(std::vector<Candidate>& candidates) {
  std::vector<size_t> order(candidates.size());
  for (auto key : {&Candidate::gain, &Candidate::damage}) {
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return candidates[a].*key > candidates[b].*key; });
    for (size_t rank = 0; rank < order.size(); ++rank) {
      Candidate& c = candidates[order[rank]];
      c.priority = key == &Candidate::gain ? rank : std::min(c.priority, rank);
    }
  }
}

/// The candidates, kernel faults first (largest gap first), then by priority
/// and gain. The single-node trials run when the trial budget allows.
std::vector<Candidate> ranked_candidates(const QuantizationTrials& trials, Search& search, double quantized_score) {
  std::vector<Candidate> candidates;
  const std::set<std::string> all = trials.node_names();
  std::vector<std::set<std::string>> sets;
  for (const QuantizableNode& node : trials.nodes()) {
    if (!nameable(node)) continue;
    Candidate c{node};
    if (trials.has_reference()) {
      auto gap = trials.kernel_gaps().find(node.name);
      if (gap != trials.kernel_gaps().end()) c.kernel_gap = gap->second.steps;
    }
    candidates.push_back(c);
    std::set<std::string> others = all;
    others.erase(node.name);
    sets.push_back({node.name});
    sets.push_back(others);
  }
  if (search.can_run(static_cast<int64_t>(sets.size()))) {
    std::vector<double> scores = search.scores(sets);
    for (size_t i = 0; i < candidates.size(); ++i) {
      candidates[i].gain = scores[2 * i] - quantized_score;
      candidates[i].damage = -scores[2 * i + 1];
    }
    set_priorities(candidates);
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    bool fault_a = a.kernel_gap > 1, fault_b = b.kernel_gap > 1;
    if (fault_a != fault_b) return fault_a;
    if (fault_a && a.kernel_gap != b.kernel_gap) return a.kernel_gap > b.kernel_gap;
    if (a.priority != b.priority) return a.priority < b.priority;
    return a.gain > b.gain;
  });
  return candidates;
}

std::set<std::string> prefix(const std::vector<Candidate>& ranked, size_t k) {
  std::set<std::string> names;
  for (size_t i = 0; i < k; ++i) names.insert(ranked[i].node.name);
  return names;
}

/// The shortest prefix of `ranked` (at most `limit` nodes) that meets the
/// budget: prefixes of 1, 2, 4, ... nodes, then bisection; the longest tried
/// when none does. Returns its length, and its score in `score`.
size_t shortest_prefix(const std::vector<Candidate>& ranked, size_t limit, Search& search, double& score) {
  size_t not_met = 0;
  size_t met = 0;
  double met_score = score;
  for (size_t k = 1; k <= limit && search.can_run(1); k = std::min(2 * k, limit)) {
    double s = search.score(prefix(ranked, k));
    if (search.within(s)) {
      met = k;
      met_score = s;
      break;
    }
    not_met = k;
    score = s;
    if (k == limit) break;
  }
  if (met == 0) return not_met;
  while (met - not_met > 1 && search.can_run(1)) {
    size_t mid = not_met + (met - not_met) / 2;
    double s = search.score(prefix(ranked, mid));
    if (search.within(s)) {
      met = mid;
      met_score = s;
    } else {
      not_met = mid;
    }
  }
  score = met_score;
  return met;
}

/// Quantizes again, least important first, each node of the first `k` the
/// result does not need: within the budget without it (or, with no budget or
/// the budget missed, no worse without it). The kept nodes become the steps.
void give_back(const std::vector<Candidate>& ranked, size_t k, Search& search, FallbackResult& result) {
  std::set<std::string> chosen = prefix(ranked, k);
  std::map<std::string, double> gains;
  bool met = search.within(result.score);
  for (size_t i = k; i-- > 0;) {
    const std::string& name = ranked[i].node.name;
    if (!search.can_run(1)) break;
    chosen.erase(name);
    double without = search.score(chosen);
    if (met ? search.within(without) : without >= result.score) {
      result.score = without;
      continue;
    }
    chosen.insert(name);
    gains[name] = result.score - without;
  }
  for (size_t i = 0; i < k; ++i) {
    const Candidate& c = ranked[i];
    if (chosen.count(c.node.name) == 0) continue;
    auto gain = gains.find(c.node.name);
    result.steps.push_back({c.node, gain == gains.end() ? 0.0 : gain->second, c.kernel_gap});
  }
}

}  // namespace

int64_t max_trials_for(int64_t candidates) {
  int64_t log2 = 0;
  while ((int64_t{1} << log2) < candidates) ++log2;
  return 1 + 2 * candidates + 2 * (log2 + 1) + candidates;
}

std::set<std::string> FallbackResult::float_nodes() const {
  std::set<std::string> names;
  for (const FallbackStep& step : steps) names.insert(step.node.name);
  return names;
}

nlohmann::json FallbackResult::to_json() const {
  nlohmann::json rows = nlohmann::json::array();
  for (const FallbackStep& step : steps) {
    rows.push_back({{"node", step.node.name},
                    {"op", step.node.op},
                    {"target", step.node.target},
                    {"gain", step.gain},
                    {"kernel_gap_steps", step.kernel_gap}});
  }
  return {{"float", float_score},
          {"quantized", quantized_score},
          {"final", score},
          {"met", met},
          {"candidates", candidates},
          {"trials", trials},
          {"out_of_trials", out_of_trials},
          {"float_nodes", rows}};
}

FallbackResult fall_back(const QuantizationTrials& trials, const FallbackOptions& options) {
  FallbackResult result;
  result.float_score = trials.float_score();
  for (const QuantizableNode& node : trials.nodes()) result.candidates += nameable(node) ? 1 : 0;
  FallbackOptions bounded = options;
  if (bounded.max_trials < 0) bounded.max_trials = max_trials_for(result.candidates);
  Search search(trials, bounded, result);
  result.quantized_score = result.score = search.score({});
  result.met = search.within(result.score);
  if (!result.met && options.max_float_nodes != 0) {
    std::vector<Candidate> ranked = ranked_candidates(trials, search, result.quantized_score);
    size_t limit = ranked.size();
    if (options.max_float_nodes > 0) limit = std::min(limit, static_cast<size_t>(options.max_float_nodes));
    size_t k = limit;
    if (search.has_budget()) {
      k = shortest_prefix(ranked, limit, search, result.score);
    } else if (k > 0 && search.can_run(1)) {
      result.score = search.score(prefix(ranked, k));
    }
    give_back(ranked, k, search, result);
    result.met = search.within(result.score);
  }
  result.trials = search.run();
  return result;
}

quant::QConfigMapping mapping_with_float_nodes(quant::QConfigMapping mapping, const ir::GraphModule& calibrated,
                                               const std::set<std::string>& float_nodes) {
  std::map<std::pair<std::string, std::string>, int64_t> next_index;  // (scope, function) -> calls so far
  for (const ir::Node* node : calibrated.graph().nodes()) {
    if (node->op() == ir::Opcode::kCallFunction) {
      ir::NodeScope scope = ir::node_scope(*node);
      int64_t index = next_index[{scope.module_path, node->target()}]++;
      if (float_nodes.count(node->name()) > 0) {
        mapping.set_module_name_object_type_order(scope.module_path, node->target(), index, std::nullopt);
      }
    } else if (node->op() == ir::Opcode::kCallModule && float_nodes.count(node->name()) > 0) {
      mapping.set_module_name(node->target(), std::nullopt);
    } else {
      TORCH_CHECK(float_nodes.count(node->name()) == 0, "node ", node->name(),
                  " cannot be left float by a QConfigMapping entry of its own");
    }
  }
  return mapping;
}

}  // namespace qfx
