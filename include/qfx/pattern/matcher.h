#pragma once
/// \file
/// Matching patterns against a graph, with PyTorch FX's rules
/// (`torch.ao.quantization.fx.match_utils.is_match`):
///
/// - a module element matches a `call_module` node whose module has exactly
///   that type; a function element a `call_function` node with that target
///   (aliases such as `torch.conv2d` / `torch.nn.functional.conv2d` are one
///   function); a method element a `call_method` node of that name;
///   `MatchAllNode` matches any argument, nodes or not;
/// - an element with argument patterns needs exactly that many positional
///   arguments (keyword arguments are not looked at), or at least that many
///   when the element allows more;
/// - a node may have at most the users its element allows: for patterns from
///   configs, one for every node but the output's (pattern.h);
/// - a class element (a rewrite rule's) matches what its test accepts.
///
/// \code
///   Pattern p = Pattern::sequence({"torch.nn.Conv2d", "torch.nn.ReLU"});
///   std::optional<PatternMatch> m = match_at(p, *relu_node, gm);
///   m->node(0);  // the conv node
/// \endcode

#include "qfx/ir/graph_module.h"
#include "qfx/pattern/pattern.h"

#include <optional>
#include <string>
#include <vector>

namespace qfx::pattern {

/// The PyTorch name of what `node` runs: the module type of a `call_module`
/// node, the canonical function name of a `call_function` node, the method
/// name of a `call_method` node; empty for other nodes.
std::string op_name_of(const ir::Node& node, const ir::GraphModule& gm);

/// The opcode of the nodes that run an op of `kind`; none for MatchAllNode
/// and classes.
std::optional<ir::Opcode> opcode_of(OpKind kind);

/// True when `op` (not MatchAllNode) is what `node` runs.
bool op_matches(const PatternOp& op, const ir::Node& node, const ir::GraphModule& gm);

/// op_matches for a node whose op_name_of is `node_op_name`: for trying many
/// patterns at one node with one module lookup.
bool op_matches_named(const PatternOp& op, const ir::Node& node, const std::string& node_op_name);

/// The match of `pattern` with its output at `node`, or nullopt.
std::optional<PatternMatch> match_at(const Pattern& pattern, ir::Node& node, const ir::GraphModule& gm);

/// Why `pattern` does not match with its output at `node` (the first
/// element that fails, e.g. `%bn has 2 users (a fused value may have one)`);
/// empty when it matches. For --explain.
std::string why_no_match(const Pattern& pattern, ir::Node& node, const ir::GraphModule& gm);

/// True when element `index` of `pattern` alone (its op or class, not its
/// arguments or users) accepts `value`.
bool element_accepts(const Pattern& pattern, size_t index, const ir::Argument& value, const ir::GraphModule& gm);

/// Why no match of `pattern` binds `node` to element `anchor` (e.g. `its
/// value does not go to relu -> torch.quantize_per_tensor`, or why the match
/// at the node its value goes to fails); empty when one does. For --explain
/// at the node a rule is about rather than at the pattern's output.
std::string why_not_at(const Pattern& pattern, size_t anchor, ir::Node& node, const ir::GraphModule& gm);

/// The order in which PyTorch tries patterns: longer ones first (counting
/// MatchAllNode elements), ties in their original order. Returns indices
/// into `patterns`.
std::vector<size_t> match_order(const std::vector<const Pattern*>& patterns);

}  // namespace qfx::pattern
