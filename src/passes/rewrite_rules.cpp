// RuleRun: collecting a rule table's matches, and the notes --explain prints.

#include "rewrite_rules.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <optional>

namespace qfx::passes::detail {

RulePattern::RulePattern(std::string rule_name, const pattern::Term& term, const std::string& anchor_name)
    : name(std::move(rule_name)), pattern(pattern::Pattern::from_term(term)) {
  const auto& elements = pattern.elements();
  size_t i = 0;
  while (i < elements.size() && elements[i].op.name != anchor_name) ++i;
  TORCH_CHECK(i < elements.size(), "rule ", name, ": no element ", anchor_name, " in ", pattern.str());
  anchor = i;
}

RulePattern::RulePattern(std::string rule_name, pattern::Pattern config_pattern)
    : name(std::move(rule_name)), pattern(std::move(config_pattern)), anchor(pattern.elements().size() - 1) {}

/// A node's op_name_of, looked up when first asked for.
class OpName {
 public:
  OpName(const ir::Node& node, const ir::GraphModule& gm) : node_(node), gm_(gm) {}
  const std::string& get() {
    if (!name_) name_ = pattern::op_name_of(node_, gm_);
    return *name_;
  }

 private:
  const ir::Node& node_;
  const ir::GraphModule& gm_;
  std::optional<std::string> name_;
};

namespace {

/// True when element `index` of `p` alone may accept `node` (its class, or
/// its op with the node's op name looked up only when the opcode fits): the
/// quick test before match_at, and whether a node is what a rule is about.
bool accepts(const pattern::Pattern& p, size_t index, ir::Node& node, OpName& op_name, const ir::GraphModule& gm) {
  const pattern::PatternOp& op = p.elements()[index].op;
  if (op.kind == pattern::OpKind::kClass) return pattern::element_accepts(p, index, ir::Argument(&node), gm);
  if (op.is_any()) return true;
  return node.op() == pattern::opcode_of(op.kind) && op_name.get() == op.name;
}

}  // namespace

RuleRun::RuleRun(std::vector<const RulePattern*> rules, ir::GraphModule& gm, RuleRunOptions options)
    : rules_(std::move(rules)), gm_(gm), options_(options), anchored_(rules_.size()) {
  std::vector<ir::Node*> nodes = gm.graph().node_list();
  if (options.walk == Walk::kBackward) std::reverse(nodes.begin(), nodes.end());
  for (ir::Node* node : nodes) {
    if (claimed_.count(node) > 0) continue;
    OpName op_name(*node, gm);
    bool found = false;
    for (size_t r = 0; r < rules_.size() && !found; ++r) {
      const pattern::Pattern& p = rules_[r]->pattern;
      if (!accepts(p, p.elements().size() - 1, *node, op_name, gm)) continue;
      std::optional<pattern::PatternMatch> match = pattern::match_at(p, *node, gm);
      if (!match) continue;
      found = true;
      RuleMatch m{r, matches_.size(), rules_[r]->anchor, std::move(*match)};
      if (options.claim) {
        for (ir::Node* n : m.match.op_nodes()) claimed_.insert(n);
      }
      anchored_[r].insert(m.anchor_node());
      matches_.push_back(std::move(m));
    }
    if (options.explain && options.claim && !found) note_misses(*node, op_name);
  }
  if (options.explain && !options.claim) {
    for (ir::Node* node : nodes) {
      OpName op_name(*node, gm);
      note_misses(*node, op_name);
    }
  }
}

void RuleRun::note_misses(ir::Node& node, OpName& op_name) {
  for (size_t r = 0; r < rules_.size(); ++r) {
    const RulePattern& rule = *rules_[r];
    if (rule.pattern.elements()[rule.anchor].op.is_any()) continue;
    if (!accepts(rule.pattern, rule.anchor, node, op_name, gm_) || anchored_[r].count(&node) > 0) continue;
    std::string why = pattern::why_not_at(rule.pattern, rule.anchor, node, gm_);
    if (!why.empty()) notes_.push_back({&node, node.name(), r, why});
  }
}

void RuleRun::rewritten(const RuleMatch& m) {
  if (!options_.explain) return;
  for (ir::Node* n : m.match.op_nodes()) covered_.insert(n);
}

void RuleRun::declined(const RuleMatch& m, const Decline& why) {
  if (options_.explain) notes_.push_back({m.anchor_node(), m.anchor_node()->name(), m.rule, why});
}

void RuleRun::explain(const std::string& verb, std::ostream& out) const {
  for (const Note& note : notes_) {
    if (covered_.count(note.node) > 0) continue;
    out << "%" << note.node_name << " not " << verb << " as " << rules_[note.rule]->name << ": " << note.why << "\n";
  }
}

}  // namespace qfx::passes::detail
