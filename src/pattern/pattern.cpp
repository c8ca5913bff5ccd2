// Pattern: both of PyTorch's pattern formats as one forward-order element
// list, and the way back to the nested format for printing and JSON.

#include "qfx/pattern/pattern.h"

#include <c10/util/Exception.h>

namespace qfx::pattern {

Pattern Pattern::op(const std::string& name) {
  Pattern p;
  p.elements_.push_back({OpCatalog::instance().resolve(name), {}});
  return p;
}

Pattern Pattern::sequence(const std::vector<std::string>& names) {
  TORCH_CHECK(!names.empty(), "a pattern sequence needs at least one op");
  Pattern p;
  for (const std::string& name : names) {
    PatternOp op = OpCatalog::instance().resolve(name);
    TORCH_CHECK(!op.is_any(), "MatchAllNode is not an op of a sequence pattern; use the complex format");
    std::vector<size_t> inputs;
    if (!p.elements_.empty()) inputs.push_back(p.elements_.size() - 1);
    p.elements_.push_back({std::move(op), std::move(inputs)});
  }
  p.one_user_inside();
  return p;
}

Pattern Pattern::from_nested(const NestedPattern& nested) {
  Pattern p;
  p.add_nested(nested);
  p.one_user_inside();
  return p;
}

Pattern Pattern::from_term(const Term& term) {
  Pattern p;
  p.add_term(term);
  return p;
}

void Pattern::one_user_inside() {
  for (size_t i = 0; i + 1 < elements_.size(); ++i) elements_[i].max_users = 1;
}

size_t Pattern::add_term(const Term& term) {
  TORCH_CHECK(!term.op.is_any() || term.args.empty(), "MatchAllNode takes no argument patterns");
  TORCH_CHECK(term.op.kind != OpKind::kClass || term.test, "the class ", term.op.name, " has no test");
  std::vector<size_t> inputs;
  for (const Term& arg : term.args) inputs.push_back(add_term(arg));
  elements_.push_back({term.op, std::move(inputs), term.max_users, term.more_args, term.test});
  return elements_.size() - 1;
}

Term Term::of(std::vector<Term> arg_terms) const {
  Term t = *this;
  t.args = std::move(arg_terms);
  return t;
}

Term Term::and_more() const {
  Term t = *this;
  t.more_args = true;
  return t;
}

Term Term::one_user() const {
  Term t = *this;
  t.max_users = 1;
  return t;
}

size_t Pattern::add_nested(const NestedPattern& nested) {
  PatternOp op = OpCatalog::instance().resolve(nested.op);
  TORCH_CHECK(!op.is_any() || nested.args.empty(), "MatchAllNode takes no argument patterns");
  std::vector<size_t> inputs;
  for (const NestedPattern& arg : nested.args) inputs.push_back(add_nested(arg));
  elements_.push_back({std::move(op), std::move(inputs)});
  return elements_.size() - 1;
}

NestedPattern Pattern::to_nested() const {
  TORCH_CHECK(!empty(), "the pattern is not set");
  return nested_at(elements_.size() - 1);
}

NestedPattern Pattern::nested_at(size_t index) const {
  const Element& e = elements_[index];
  std::vector<NestedPattern> args;
  for (size_t input : e.inputs) args.push_back(nested_at(input));
  return NestedPattern(e.op.name, std::move(args));
}

const Pattern::Element& Pattern::root() const {
  TORCH_CHECK(!empty(), "the pattern is not set");
  return elements_.back();
}

size_t Pattern::default_root_index() const {
  size_t index = elements_.size() - 1;
  while (!elements_[index].inputs.empty()) index = elements_[index].inputs.back();
  return index;
}

bool Pattern::is_sequence() const {
  if (empty()) return false;
  for (size_t i = 0; i < elements_.size(); ++i) {
    const Element& e = elements_[i];
    if (e.op.is_any()) return false;
    if (i == 0 ? !e.inputs.empty() : e.inputs != std::vector<size_t>{i - 1}) return false;
  }
  return true;
}

std::vector<std::string> Pattern::sequence_names() const {
  std::vector<std::string> names;
  if (!is_sequence()) return names;
  for (const Element& e : elements_) names.push_back(e.op.name);
  return names;
}

size_t Pattern::num_ops() const {
  size_t n = 0;
  for (const Element& e : elements_) n += e.op.is_any() ? 0 : 1;
  return n;
}

std::vector<size_t> Pattern::path_to(size_t index) const {
  std::function<bool(size_t, std::vector<size_t>&)> walk = [&](size_t at, std::vector<size_t>& path) {
    path.push_back(at);
    if (at == index) return true;
    for (size_t input : elements_[at].inputs) {
      if (walk(input, path)) return true;
    }
    path.pop_back();
    return false;
  };
  std::vector<size_t> path;
  if (!empty()) walk(elements_.size() - 1, path);
  return path;
}

std::string Pattern::str() const {
  if (empty()) return "<no pattern>";
  if (!is_sequence()) return str_at(elements_.size() - 1);
  std::string out;
  for (const Element& e : elements_) out += (out.empty() ? "" : " -> ") + e.op.name;
  return out;
}

std::string Pattern::str_at(size_t index) const {
  const Element& e = elements_[index];
  if (e.inputs.empty()) return e.op.name;
  std::string out = e.op.name + "(";
  for (size_t i = 0; i < e.inputs.size(); ++i) out += (i ? ", " : "") + str_at(e.inputs[i]);
  return out + ")";
}

size_t Pattern::hash() const {
  size_t h = elements_.size();
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (const Element& e : elements_) {
    mix(std::hash<std::string>()(e.op.name));
    for (size_t input : e.inputs) mix(input);
  }
  return h;
}

ir::Node* PatternMatch::node(size_t index) const {
  TORCH_CHECK(index < values.size(), "pattern element ", index, " is out of range (", values.size(), " matched)");
  return values[index].is_node() ? values[index].to_node() : nullptr;
}

std::vector<ir::Node*> PatternMatch::op_nodes() const {
  std::vector<ir::Node*> nodes;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!pattern->elements()[i].op.is_any()) nodes.push_back(node(i));
  }
  return nodes;
}

}  // namespace qfx::pattern
