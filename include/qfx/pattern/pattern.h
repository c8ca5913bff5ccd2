#pragma once
/// \file
/// Pattern: a small dataflow graph of ops that a config refers to, kept in
/// forward order. PyTorch has two ways of writing one, and both become this
/// same representation:
///
/// - a sequence in forward order, `(torch.nn.Conv2d, torch.nn.ReLU)`:
///   relu(conv(x));
/// - the reversed nested-tuple format, `(op, arg0_pattern, arg1_pattern, ...)`,
///   with `MatchAllNode` for "any argument":
///   `(torch.nn.ReLU, (operator.add, MatchAllNode, torch.nn.Conv2d))` is
///   relu(add(any, conv(x))).
///
/// The elements are listed inputs first (post-order from the output, argument
/// by argument); each names the earlier elements its positional arguments
/// must match. The last element is the pattern's output. Each element also
/// says how many users its node may have: PyTorch's rule, that every node
/// but the output has one user (so a fusion never drops a value someone
/// else reads), is written into the patterns made from configs.
///
/// Rewrite rules (lower-to-native) write their patterns by hand as Terms,
/// which may also name a class of values by a test, let a node have more
/// arguments than the pattern constrains, and lift the one-user rule:
///
/// \code
///   // torch.quantize_per_tensor(<ref module>(x.dequantize()), ...)
///   Term ref = Term::of_class("a reference module", is_reference_module);  // an ArgTest
///   Term dq = Term::method("dequantize").of({Term::any()});
///   Pattern p = Pattern::from_term(Term::function("torch.quantize_per_tensor").of({ref.of({dq})}).and_more());
/// \endcode
///
/// \code
///   Pattern p = Pattern::from_nested({"torch.nn.ReLU", {{"operator.add", {"MatchAllNode", "torch.nn.Conv2d"}}}});
///   p.str();  // "torch.nn.ReLU(operator.add(MatchAllNode, torch.nn.Conv2d))"
///   p.elements()[0].op.is_any();  // true: the add's first argument
///   Pattern::sequence({"torch.nn.Conv2d", "torch.nn.ReLU"}) ==
///       Pattern::from_nested({"torch.nn.ReLU", {"torch.nn.Conv2d"}});  // true
/// \endcode

#include "qfx/ir/argument.h"
#include "qfx/pattern/op_catalog.h"

#include <cstddef>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace qfx::ir {
class GraphModule;
}  // namespace qfx::ir

namespace qfx::pattern {

/// A pattern as written in PyTorch's reversed nested-tuple format: an op name
/// and the patterns of its leading positional arguments.
struct NestedPattern {
  std::string op;
  std::vector<NestedPattern> args;

  NestedPattern(const char* op_name) : op(op_name) {}  // NOLINT: a bare op, as in Python
  NestedPattern(std::string op_name, std::vector<NestedPattern> arg_patterns = {})
      : op(std::move(op_name)), args(std::move(arg_patterns)) {}
  bool operator==(const NestedPattern& other) const { return op == other.op && args == other.args; }
};

/// The test of a class element: whether `value` (a node or any other
/// argument) is of the class.
using ArgTest = std::function<bool(const ir::Argument& value, const ir::GraphModule& gm)>;

/// No limit on an element's users.
inline constexpr size_t kAnyUsers = std::numeric_limits<size_t>::max();

/// A pattern element written by hand: an op or a class, the patterns of its
/// leading positional arguments, and its constraints.
struct Term {
  PatternOp op;
  ArgTest test;  ///< for a class
  std::vector<Term> args;
  bool more_args = false;        ///< the node may have arguments after those in `args`
  size_t max_users = kAnyUsers;  ///< at most this many users

  /// MatchAllNode.
  static Term any() { return {}; }
  /// A function or method op, by its canonical name (no catalog lookup).
  static Term function(std::string name) { return {{OpKind::kFunction, std::move(name)}, {}, {}}; }
  static Term method(std::string name) { return {{OpKind::kMethod, std::move(name)}, {}, {}}; }
  /// A class of values named `description`, those `test` accepts.
  static Term of_class(std::string description, ArgTest test) {
    return {{OpKind::kClass, std::move(description)}, std::move(test), {}};
  }

  /// This term with argument patterns `arg_terms`.
  Term of(std::vector<Term> arg_terms) const;
  /// This term, allowing arguments after the constrained ones.
  Term and_more() const;
  /// This term, whose node may have one user only.
  Term one_user() const;
};

/// A pattern in forward order (see the file comment).
class Pattern {
 public:
  /// One op of the pattern and the elements its positional arguments match.
  struct Element {
    PatternOp op;
    std::vector<size_t> inputs;  ///< indices of earlier elements, one per argument
    size_t max_users = kAnyUsers;
    bool more_args = false;  ///< inputs constrain the leading arguments only
    ArgTest test;            ///< for a class
    bool operator==(const Element& other) const {
      return op == other.op && inputs == other.inputs && max_users == other.max_users && more_args == other.more_args;
    }
  };

  /// No pattern (a config whose pattern is not set yet).
  Pattern() = default;
  /// One op; the name is resolved through OpCatalog (c10::Error if unknown).
  static Pattern op(const std::string& name);
  /// Ops applied one after the other, in forward order.
  static Pattern sequence(const std::vector<std::string>& names);
  /// From PyTorch's reversed nested-tuple format.
  static Pattern from_nested(const NestedPattern& nested);
  /// A hand-written pattern (a rewrite rule's), exactly as `term` says.
  static Pattern from_term(const Term& term);

  /// The reversed nested-tuple form.
  NestedPattern to_nested() const;

  bool empty() const { return elements_.empty(); }
  const std::vector<Element>& elements() const { return elements_; }
  /// The output op (the last element).
  const Element& root() const;
  /// The element PyTorch's default root-node getter picks: from the output,
  /// follow the last argument until an element without arguments.
  size_t default_root_index() const;

  /// True for one op, or a chain of ops each taking the previous one as its
  /// only constrained argument, with no MatchAllNode.
  bool is_sequence() const;
  /// The ops of a sequence in forward order (empty if not a sequence).
  std::vector<std::string> sequence_names() const;
  /// The number of ops, MatchAllNode excluded.
  size_t num_ops() const;
  /// The indices of the elements from the output down to `index` (both
  /// included), following arguments.
  std::vector<size_t> path_to(size_t index) const;

  /// `torch.nn.Linear`; `torch.nn.Conv2d -> torch.nn.ReLU` for a sequence;
  /// `torch.nn.ReLU(operator.add(MatchAllNode, torch.nn.Conv2d))` otherwise.
  std::string str() const;

  bool operator==(const Pattern& other) const { return elements_ == other.elements_; }
  bool operator!=(const Pattern& other) const { return !(*this == other); }
  size_t hash() const;

 private:
  size_t add_nested(const NestedPattern& nested);
  size_t add_term(const Term& term);
  /// PyTorch's rule for config patterns: one user for all but the output.
  void one_user_inside();
  NestedPattern nested_at(size_t index) const;
  std::string str_at(size_t index) const;

  std::vector<Element> elements_;
};

/// What one match of a pattern bound: a value per pattern element, in the
/// pattern's element order (a node for an op, any argument for MatchAllNode).
struct PatternMatch {
  const Pattern* pattern = nullptr;
  std::vector<ir::Argument> values;

  /// The node matched by element `index`, or nullptr when it is not a node.
  ir::Node* node(size_t index) const;
  /// The nodes bound to ops (MatchAllNode values left out), in element order.
  std::vector<ir::Node*> op_nodes() const;
};

/// Picks the node a matched pattern is replaced by, e.g. the conv of
/// conv + add (PyTorch's `root_node_getter`).
using RootNodeGetter = std::function<ir::Node*(const PatternMatch&)>;

/// The extra inputs a fused node takes beyond the root node's arguments, e.g.
/// the other operand of conv + add (PyTorch's `extra_inputs_getter`).
using ExtraInputsGetter = std::function<std::vector<ir::Argument>(const PatternMatch&)>;

struct PatternHash {
  size_t operator()(const Pattern& p) const { return p.hash(); }
};

}  // namespace qfx::pattern
