#pragma once
// Rewrite rules: a pass written as a table of {name, pattern, rewrite} rows
// on the pattern engine, and the one driver that applies a table: collect
// the matches on the graph as it is, then rewrite them one by one. A
// rewrite changes the graph or declines with a reason and changes nothing;
// --explain prints, at each node a rule is about (its anchor element) that
// no rewrite covered, why each rule did not apply there:
//
//   %relu not fused as torch.nn.Conv2d -> torch.nn.ReLU: %conv has 2 users (a fused value may have one)
//   %linear not lowered as static weighted module: its qconfig is None
//
// fuse's rules are its BackendConfig's fusion patterns; lower-to-native's
// are tables in passes/lower/.
//
//   RuleRun run(patterns_of(rules), gm, {Walk::kForward});  // collect
//   apply_rules(run, rules, context, is_erased);  // re-matches each first
//   run.explain("lowered", out);

#include "qfx/ir/graph_module.h"
#include "qfx/pattern/matcher.h"

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <unordered_set>
#include <vector>

namespace qfx::passes::detail {

/// What a rewrite returns: empty when it rewrote the graph; otherwise why
/// not, and then it changed nothing.
using Decline = std::string;

/// A rule's name, pattern, and the element it is about (the op it rewrites).
struct RulePattern {
  std::string name;
  pattern::Pattern pattern;
  size_t anchor = 0;

  /// The anchor is the element whose op (or class) is named `anchor_name`.
  RulePattern(std::string rule_name, const pattern::Term& term, const std::string& anchor_name);
  /// For a config's pattern: the anchor is its output.
  RulePattern(std::string rule_name, pattern::Pattern config_pattern);
};

/// One match of a rule: which rule, its place in the collection order, the
/// values bound.
struct RuleMatch {
  size_t rule = 0;
  size_t index = 0;
  size_t anchor = 0;  ///< the rule's anchor element
  pattern::PatternMatch match;

  ir::Node* output() const { return match.node(match.values.size() - 1); }
  ir::Node* anchor_node() const { return match.node(anchor); }
};

/// A rule of a pass whose rewrites work on a `Context`.
template <class Context>
struct RewriteRule : RulePattern {
  std::function<Decline(Context&, const RuleMatch&)> rewrite;

  RewriteRule(std::string rule_name, const pattern::Term& term, const std::string& anchor_name,
              std::function<Decline(Context&, const RuleMatch&)> fn)
      : RulePattern(std::move(rule_name), term, anchor_name), rewrite(std::move(fn)) {}
  RewriteRule(std::string rule_name, pattern::Pattern config_pattern,
              std::function<Decline(Context&, const RuleMatch&)> fn)
      : RulePattern(std::move(rule_name), std::move(config_pattern)), rewrite(std::move(fn)) {}
};

class OpName;  // a node's op name, looked up once when first needed (rewrite_rules.cpp)

/// The order nodes are visited in.
enum class Walk { kForward, kBackward };

struct RuleRunOptions {
  Walk walk = Walk::kForward;
  /// A node belongs to the first match that binds it (fuse); otherwise
  /// matches may share nodes.
  bool claim = false;
  /// Each match is matched again at its output before its rewrite (an
  /// earlier rewrite may have changed it); off where a rewrite needs what
  /// the graph was when collected (a module called twice, fuse).
  bool recheck = true;
  /// Note, for explain(), why rules did not match.
  bool explain = false;
};

/// The matches of a rule table on a graph, collected before any rewrite,
/// and what became of them.
class RuleRun {
 public:
  /// Visits the nodes in `options.walk` order; at each, the first rule (in
  /// table order) whose pattern matches with its output there.
  RuleRun(std::vector<const RulePattern*> rules, ir::GraphModule& gm, RuleRunOptions options);

  const std::vector<RuleMatch>& matches() const { return matches_; }
  const RulePattern& rule(size_t index) const { return *rules_[index]; }
  const RuleRunOptions& options() const { return options_; }
  ir::GraphModule& gm() const { return gm_; }

  /// Records that `m` was rewritten (its nodes need no explaining) or declined.
  void rewritten(const RuleMatch& m);
  void declined(const RuleMatch& m, const Decline& why);
  /// `%node not <verb> as <rule>: <why>` for each note on a node no rewrite covered.
  void explain(const std::string& verb, std::ostream& out) const;

 private:
  struct Note {
    const ir::Node* node;
    std::string node_name;
    size_t rule;
    std::string why;
  };
  void note_misses(ir::Node& node, OpName& op_name);

  std::vector<const RulePattern*> rules_;
  ir::GraphModule& gm_;
  RuleRunOptions options_;
  std::vector<RuleMatch> matches_;
  std::vector<std::unordered_set<const ir::Node*>> anchored_;  // per rule, the anchors of its matches
  std::unordered_set<const ir::Node*> claimed_;
  std::unordered_set<const ir::Node*> covered_;  // op nodes of rewritten matches
  std::vector<Note> notes_;
};

/// The patterns of `rules`, for RuleRun.
template <class Context>
std::vector<const RulePattern*> patterns_of(const std::vector<RewriteRule<Context>>& rules) {
  std::vector<const RulePattern*> patterns;
  for (const RewriteRule<Context>& rule : rules) patterns.push_back(&rule);
  return patterns;
}

/// Rewrites the matches of `run` (whose rules are `rules`) in collection
/// order. With `recheck`, each is matched again at its output first and
/// skipped when it no longer matches or `is_erased` says an earlier rewrite
/// erased its output. True when a rewrite happened.
template <class Context>
bool apply_rules(RuleRun& run, const std::vector<RewriteRule<Context>>& rules, Context& context,
                 const std::function<bool(const ir::Node*)>& is_erased = {}) {
  bool changed = false;
  for (const RuleMatch& found : run.matches()) {
    RuleMatch m = found;
    if (run.options().recheck) {
      if (is_erased && is_erased(found.output())) continue;
      std::optional<pattern::PatternMatch> again = pattern::match_at(rules[m.rule].pattern, *found.output(), run.gm());
      if (!again) continue;
      m.match = std::move(*again);
    }
    Decline why = rules[m.rule].rewrite(context, m);
    if (why.empty()) {
      run.rewritten(m);
      changed = true;
    } else {
      run.declined(m, why);
    }
  }
  return changed;
}

}  // namespace qfx::passes::detail
