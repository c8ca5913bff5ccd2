// The graph an export compiles, rewritten node by node into TorchScript's
// vocabulary; each rewrite is one function below, applied in script_graph.

#include "script_graph.h"

#include "qfx/ir/op_names.h"

#include "qfx/ir/aten_ops.h"
#include "qfx/ir/kernel_workarounds.h"

#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace qfx::io::detail {
namespace {

/// Dtypes, layouts and memory formats as the integer codes TorchScript reads.
ir::Argument as_codes(const ir::Argument& arg) {
  switch (arg.kind()) {
    case ir::Argument::Kind::kDtype: return static_cast<int64_t>(arg.to_dtype());
    case ir::Argument::Kind::kLayout: return static_cast<int64_t>(arg.to_layout());
    case ir::Argument::Kind::kMemoryFormat: return static_cast<int64_t>(arg.to_memory_format());
    case ir::Argument::Kind::kList:
    case ir::Argument::Kind::kTuple: {
      ir::Argument::Items items;
      for (const ir::Argument& item : arg.items()) items.push_back(as_codes(item));
      return arg.kind() == ir::Argument::Kind::kList ? ir::Argument::list(items) : ir::Argument::tuple(items);
    }
    default: return arg;
  }
}

/// A `torch.nn.functional.X` call as the ATen op it traces to.
void to_aten(ir::Node& node) {
  const ir::Argument* inplace = node.kwarg("inplace");
  bool want_inplace = inplace != nullptr && inplace->kind() == ir::Argument::Kind::kBool && inplace->to_bool();
  const ir::AtenSpelling* spelling = ir::find_aten_spelling(node.target(), want_inplace);
  TORCH_CHECK(spelling != nullptr, "export: no TorchScript form for %", node.name(), " (", node.target(), ")");
  std::vector<ir::Argument> args = node.args();
  if (!spelling->aten_position.empty()) {
    args.clear();
    for (size_t i = 0; i < spelling->aten_position.size() && i < node.args().size(); ++i) {
      size_t at = spelling->aten_position[i];
      if (args.size() <= at) args.resize(at + 1);
      args[at] = node.args()[i];
    }
  }
  ir::Kwargs kwargs;
  for (const auto& kv : node.kwargs()) {
    if (kv.first != "inplace") kwargs.push_back(kv);
  }
  node.set_target("torch." + spelling->aten.substr(6));
  node.set_args(args);
  node.set_kwargs(kwargs);
}

/// `torch._assert(condition, message)`: TorchScript has no operator for it
/// (Python compiles it to an `if` that raises), so the check is kept as
/// `torch._assert_async(torch.tensor(condition))`, without the message.
void lower_assert(ir::Graph& graph, ir::Node& node) {
  auto guard = graph.inserting_before(&node);
  ir::Node* condition = graph.call_function("torch.tensor", {node.args().at(0)});
  node.set_target("torch._assert_async");
  node.set_args({condition});
}

/// `F.interpolate(x, size=..., scale_factor=..., mode=..., align_corners=...)`
/// as TorchScript's own `aten::__interpolate`, which computes as Python's.
void interpolate_to_aten(ir::Node& node) {
  std::vector<ir::Argument> args = node.args();
  const char* names[] = {"input", "size", "scale_factor", "mode", "align_corners"};
  args.resize(std::size(names));
  for (size_t i = 1; i < std::size(names); ++i) {
    if (const ir::Argument* kw = node.kwarg(names[i])) args[i] = *kw;
  }
  if (args[3].is_none()) args[3] = std::string("nearest");
  node.set_target("torch.__interpolate");
  node.set_args(args);
  node.set_kwargs({});
}

ir::Argument int_list_argument(const std::vector<int64_t>& values) {
  ir::Argument::Items items(values.begin(), values.end());
  return ir::Argument::list(items);
}

/// A functional pointwise convolution on onednn, `torch.ops.quantized.conv2d(x,
/// packed, scale, zero_point)`, as quantized::linear over the channels
/// (nn::pointwise_linear_weight says why); its weight registered in `attrs`
/// under a get_attr node added to `registered`.
void pointwise_conv_to_linear(const ir::GraphModule& gm, ir::Graph& graph, ir::Node& node, ScriptAttrs& attrs,
                              std::unordered_set<const ir::Node*>& registered) {
  if (!attrs.pointwise_as_linear() || node.op() != ir::Opcode::kCallFunction || node.args().size() != 4 ||
      !node.args()[1].is_node())
    return;
  const ir::Node& packed = *node.args()[1].to_node();
  if (packed.op() != ir::Opcode::kGetAttr) return;  // a convolution's packed weight is a folded attribute
  std::optional<PointwiseLinear> p = pointwise_linear(node.target(), gm.get_attr(packed.target()));
  if (!p) return;
  auto guard = graph.inserting_before(&node);
  ir::Node* weight = graph.get_attr(attrs.add(packed.target() + "_linear", p->weight).substr(5));
  registered.insert(weight);
  ir::Node* input = graph.call_method("permute", {node.args()[0], int_list_argument(p->channels_last)});
  ir::Node* linear = graph.call_function(p->op, {input, weight, node.args()[2], node.args()[3]});
  ir::Node* output = graph.call_method("permute", {linear, int_list_argument(p->channels_first)});
  node.replace_all_uses_with(output);
  graph.erase_node(&node);
}

/// Which values of a graph are Python ints: what FX's tracer records for
/// size arithmetic (`x.size(1) ** 2`), where Python and TorchScript differ.
class IntValues {
 public:
  /// An int literal, or a node that gives an int: `x.size(d)`, `x.dim()`,
  /// `x.numel()`, an item of `x.size()` / `x.shape`, and +, -, *, //, %,
  /// unary - and ** of ints.
  bool is_int(const ir::Argument& arg) {
    if (arg.kind() == ir::Argument::Kind::kInt) return true;
    if (!arg.is_node()) return false;
    const ir::Node* node = arg.to_node();
    auto it = known_.find(node);
    if (it != known_.end()) return it->second;
    return known_[node] = gives_int(*node);
  }

 private:
  bool gives_int(const ir::Node& node) {
    const std::string& t = node.target();
    const auto& args = node.args();
    if (node.op() == ir::Opcode::kCallMethod) {
      return (t == "size" && args.size() == 2) || t == "dim" || t == "numel";
    }
    if (node.op() != ir::Opcode::kCallFunction) return false;
    if (t == ir::op::kGetitem)
      return args.size() == 2 && gives_sizes(args[0]) && args[1].kind() == ir::Argument::Kind::kInt;
    static const std::unordered_set<std::string> kIntArithmetic = {"operator.add",      "operator.sub", "operator.mul",
                                                                   "operator.floordiv", "operator.mod", "operator.pow"};
    if (t == "operator.neg") return args.size() == 1 && is_int(args[0]);
    return kIntArithmetic.count(t) > 0 && args.size() == 2 && is_int(args[0]) && is_int(args[1]);
  }

  /// `x.size()` or `x.shape`.
  static bool gives_sizes(const ir::Argument& arg) {
    if (!arg.is_node()) return false;
    const ir::Node& n = *arg.to_node();
    if (n.op() == ir::Opcode::kCallMethod) return n.target() == "size" && n.args().size() == 1;
    return n.op() == ir::Opcode::kCallFunction && n.target() == ir::op::kGetattr && n.args().size() == 2 &&
           n.args()[1].kind() == ir::Argument::Kind::kString && n.args()[1].to_string() == "shape";
  }

  std::unordered_map<const ir::Node*, bool> known_;
};

/// Python's `int ** int` is an int (for sizes, whose exponents are not
/// negative); TorchScript's is a float, which a size argument refuses: the
/// power of two ints is wrapped in `int()`.
void int_power(ir::Graph& graph, ir::Node& node, IntValues& ints) {
  if (node.op() != ir::Opcode::kCallFunction || node.target() != "operator.pow" || !ints.is_int(&node)) return;
  ir::Node* as_int = nullptr;
  {
    auto guard = graph.inserting_after(&node);
    as_int = graph.call_function("int", {&node});
  }
  node.replace_all_uses_with(as_int);
  as_int->replace_input_with(as_int, &node);
}

}  // namespace

std::unique_ptr<ir::Graph> script_graph(const ir::GraphModule& gm, ScriptAttrs& attrs) {
  std::unique_ptr<ir::Graph> graph = gm.graph().clone();
  std::unordered_set<const ir::Node*> registered;  // get_attr nodes whose attribute `attrs` already holds
  IntValues ints;
  for (ir::Node* node : graph->node_list()) {
    if (node->op() == ir::Opcode::kCallFunction && node->target() == "torch._assert") lower_assert(*graph, *node);
    pointwise_conv_to_linear(gm, *graph, *node, attrs, registered);
    int_power(*graph, *node, ints);
    if (ir::is_clamp_family(gm, *node)) ir::clamp_in_memory_order(*graph, *node);
    ir::avg_pool_in_ceil_mode(*graph, *node);
  }
  for (ir::Node* node : graph->nodes()) {
    if (registered.count(node) != 0) continue;
    std::vector<ir::Argument> args;
    for (const ir::Argument& a : node->args()) args.push_back(as_codes(a));
    node->set_args(args);
    ir::Kwargs kwargs;
    for (const auto& [k, v] : node->kwargs()) kwargs.emplace_back(k, as_codes(v));
    node->set_kwargs(kwargs);
    if (node->op() == ir::Opcode::kGetAttr) {
      node->set_target(attrs.add(node->target(), gm.get_attr(node->target())).substr(5));
    } else if (node->op() == ir::Opcode::kCallFunction) {
      const std::string& t = node->target();
      if (t == "torch.nn.functional.interpolate") {
        interpolate_to_aten(*node);
      } else if (t.rfind("torch.nn.functional.", 0) == 0) {
        to_aten(*node);
      }
      bool known = t.rfind("torch.", 0) == 0 || t.rfind("operator.", 0) == 0 || t == ir::op::kGetattr || t == "int";
      TORCH_CHECK(known, "export: no TorchScript form for %", node->name(), " (", t, ")");
    }
  }
  return graph;
}

}  // namespace qfx::io::detail
