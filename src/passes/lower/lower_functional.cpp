// lower-to-native, functional steps: F.linear / F.conv*d between dequantize
// and quantize become quantized.linear / conv*d (with relu) on a prepacked
// weight; dynamic ones become linear_dynamic; add / mul / matmul become
// quantized.add / add_relu / mul / matmul. Then fold_weights packs each
// weight once and stores it as an attribute.

#include "lowering.h"

#include "passes/attr_names.h"
#include "lower_tables.h"

#include "qfx/ir/interpreter.h"
#include "qfx/ir/module_registry.h"

#include <unordered_set>

namespace qfx::passes::detail {
namespace {

const FunctionLowering* find_function(const std::vector<FunctionLowering>& table, const ir::Node& node) {
  if (node.op() != ir::Opcode::kCallFunction) return nullptr;
  std::string name = function_name(node);
  for (const FunctionLowering& row : table) {
    if (name == row.function) return &row;
  }
  return nullptr;
}

/// Spatial dimensions of a functional conv (`torch.nn.functional.conv2d` -> 2), 0 for others.
int64_t conv_dims(const ir::Node& func) {
  const std::string name = function_name(func);
  const std::string prefix = "torch.nn.functional.conv";
  if (name.rfind(prefix, 0) != 0 || name.size() != prefix.size() + 2) return 0;
  return name[prefix.size()] - '0';
}

/// The prepack arguments: the quantized weight, then the op's arguments
/// after the weight. A conv's missing bias, stride, padding, dilation and
/// groups are filled in from its keywords and defaults (a trace drops
/// default arguments, which 1.13's prepack then misses:
/// docs/divergences.md); conv1d's ints as tuples.
std::vector<ir::Argument> prepack_args(const ir::Node& func, ir::Node* quantized_weight) {
  std::vector<ir::Argument> args = {quantized_weight};
  args.insert(args.end(), func.args().begin() + 2, func.args().end());
  int64_t dims = conv_dims(func);
  if (dims == 0) return args;
  auto ints = [dims](int64_t v) { return ir::Argument::list(ir::Argument::Items(dims, ir::Argument(v))); };
  const char* names[] = {"bias", "stride", "padding", "dilation", "groups"};
  std::vector<ir::Argument> defaults = {ir::Argument(), ints(1), ints(0), ints(1), ir::Argument(int64_t{1})};
  for (size_t i = args.size() - 1; i < 5; ++i) {
    const ir::Argument* keyword = func.kwarg(names[i]);
    args.push_back(keyword != nullptr ? *keyword : defaults[i]);
  }
  if (dims == 1) {  // conv1d's int stride, padding, dilation as tuples, as PyTorch
    for (size_t i : {2, 3, 4}) {
      if (args[i].kind() == ir::Argument::Kind::kInt) args[i] = ir::Argument::tuple({args[i]});
    }
  }
  return args;
}

bool is_quantize_weight(const ir::Node& node) {
  return is_call(node, ir::Opcode::kCallFunction, "torch.quantize_per_tensor") ||
         is_call(node, ir::Opcode::kCallFunction, "torch.quantize_per_channel");
}

void lower_static_functional(Lowering& l, ir::Node* node) {
  auto accept = [](const ir::Node& n) { return find_function(static_function_lowerings(), n) != nullptr; };
  std::optional<StaticMatch> m = match_static(l, node, accept, {0, 1});
  if (!m) return;
  ir::Node* func = m->ref;
  ir::Node* input_dq = func->args()[0].to_node();
  ir::Node* weight_dq = func->args()[1].to_node();
  ir::Node* weight = weight_dq->args()[0].is_node() ? weight_dq->args()[0].to_node() : nullptr;
  if (weight == nullptr || !is_quantize_weight(*weight)) {
    l.refusals[func] = "its weight is not quantized by quantize_per_tensor/quantize_per_channel";
    return;
  }
  const FunctionLowering* row = find_function(static_function_lowerings(), *func);
  ir::Node* scale = m->q->args()[1].to_node();
  ir::Node* zero_point = m->q->args()[2].to_node();
  ir::Node* packed = nullptr;
  {
    auto guard = l.gm.graph().inserting_before(scale);
    packed = l.gm.graph().call_function(prepack_op(row->function, weight->args().back().to_dtype()),
                                        prepack_args(*func, weight));
  }
  func->set_target(m->relu != nullptr ? row->relu_op : row->op);
  func->set_args({input_dq->args()[0], packed, scale, zero_point});
  m->q->replace_all_uses_with(func);
  zero_point->append(func);
  l.gm.graph().erase_node(m->q);
  if (m->relu != nullptr) l.gm.graph().erase_node(m->relu);
  l.changed = true;
}

/// quantize_per_tensor_dynamic - dequantize - F.linear (- F.relu).
void lower_dynamic_functional(Lowering& l, ir::Node* node) {
  ir::Node* func = node;
  ir::Node* relu = nullptr;
  auto relu_module = l.module(node);
  if (is_call(*node, ir::Opcode::kCallFunction, "torch.nn.functional.relu") ||
      (relu_module && ir::module_type_name(*relu_module) == "torch.nn.ReLU")) {
    relu = node;
    if (relu->args().empty() || !relu->args()[0].is_node()) return;
    func = relu->args()[0].to_node();
  }
  if (node_has_none_qconfig(*func) || find_function(dynamic_function_lowerings(), *func) == nullptr) return;
  if (func->args().size() < 2 || !is_dequantize(func->args()[0]) || !is_dequantize(func->args()[1])) return;
  ir::Node* input_q = func->args()[0].to_node()->args()[0].to_node();
  if (!is_call(*input_q, ir::Opcode::kCallFunction, "torch.quantize_per_tensor_dynamic")) return;
  c10::ScalarType compute = input_q->args().at(1).to_dtype();
  bool is_fp16 = compute == c10::kHalf, is_int8 = compute == c10::kQUInt8 || compute == c10::kQInt8;
  if (!is_int8 && !is_fp16) return;
  ir::Node* weight = func->args()[1].to_node()->args()[0].to_node();
  c10::ScalarType weight_dtype = weight->args().back().to_dtype();
  const FunctionLowering* row = nullptr;
  for (const FunctionLowering& r : dynamic_function_lowerings()) {
    if (r.function == function_name(*func) && r.activation == compute && r.weight == weight_dtype) row = &r;
  }
  if (row == nullptr || std::string(row->relu_op).empty()) {
    l.refusals[func] = row == nullptr ? "no dynamic quantized op for these dtypes"
                                      : "no dynamic quantized op with relu for " + function_name(*func);
    return;
  }
  ir::Node* packed = nullptr;
  {
    auto guard = l.gm.graph().inserting_before(func);
    packed = l.gm.graph().call_function(prepack_op(row->function, weight_dtype), prepack_args(*func, weight));
  }
  func->set_target(relu != nullptr ? row->relu_op : row->op);
  if (is_int8) {
    func->set_args({input_q->args()[0], packed, input_q->args().at(2)});
  } else {
    func->set_args({input_q->args()[0], packed});
  }
  if (relu != nullptr) {
    relu->replace_all_uses_with(func);
    l.gm.graph().erase_node(relu);
  }
  l.changed = true;
}

void lower_binary_op(Lowering& l, ir::Node* node) {
  auto accept = [](const ir::Node& n) { return find_function(binary_op_lowerings(), n) != nullptr; };
  std::optional<StaticMatch> m = match_static(l, node, accept, {0, 1});
  if (!m) return;
  ir::Node* op = m->ref;
  const FunctionLowering* row = find_function(binary_op_lowerings(), *op);
  std::string qop = m->relu != nullptr ? row->relu_op : row->op;
  if (qop.empty()) {
    l.refusals[op] = "no quantized " + function_name(*op) + " with relu";
    return;
  }
  size_t dequantized = 0;
  for (const ir::Argument& arg : std::vector<ir::Argument>(op->args())) {
    if (!is_dequantize(arg)) continue;
    op->replace_input_with(arg.to_node(), arg.to_node()->args()[0].to_node());
    ++dequantized;
  }
  std::vector<ir::Argument> args = op->args();
  if (dequantized == 2) args.insert(args.end(), {m->q->args()[1], m->q->args()[2]});
  ir::Node* lowered = nullptr;
  {
    auto guard = l.gm.graph().inserting_after(m->q);
    lowered = l.gm.graph().call_function(qop, args);
    lowered->meta() = op->meta();
  }
  m->q->replace_all_uses_with(lowered);
  l.gm.graph().erase_node(m->q);
  if (m->relu != nullptr) l.gm.graph().erase_node(m->relu);
  l.gm.graph().erase_node(op);
  l.changed = true;
}

bool is_prepack(const ir::Node& node) {
  static const std::unordered_set<std::string> kPrepackOps = {
      "torch.ops.quantized.linear_prepack", "torch.ops.quantized.linear_prepack_fp16",
      "torch.ops.quantized.conv1d_prepack", "torch.ops.quantized.conv2d_prepack", "torch.ops.quantized.conv3d_prepack"};
  return node.op() == ir::Opcode::kCallFunction && kPrepackOps.count(node.target()) > 0;
}

/// PyTorch's collect_producer_nodes: `node` and everything it is computed
/// from, or empty when that includes a graph input.
std::unordered_set<const ir::Node*> producers_of(ir::Node* node) {
  std::unordered_set<const ir::Node*> nodes = {node};
  std::vector<ir::Node*> frontier = {node};
  while (!frontier.empty()) {
    ir::Node* n = frontier.back();
    frontier.pop_back();
    for (ir::Node* input : n->input_nodes()) {
      if (input->op() == ir::Opcode::kPlaceholder) return {};
      if (nodes.insert(input).second && !is_call(*input, ir::Opcode::kCallFunction, "getattr"))
        frontier.push_back(input);
    }
  }
  return nodes;
}

/// Runs the producers of `prepack` (in graph order) and returns its value.
c10::IValue evaluate(const Lowering& l, ir::Node* prepack, const std::unordered_set<const ir::Node*>& producers) {
  auto graph = std::make_unique<ir::Graph>();
  std::unordered_map<const ir::Node*, ir::Node*> copies;
  for (ir::Node* n : l.gm.graph().nodes()) {
    if (producers.count(n) == 0) continue;
    copies[n] = graph->node_copy(*n, [&copies](ir::Node* input) -> ir::Argument { return copies.at(input); });
    if (n == prepack) break;
  }
  graph->output(copies.at(prepack));
  ir::GraphModule producer_module(l.gm.root_ptr(), std::move(graph));
  return ir::Interpreter(producer_module).run({});
}

}  // namespace

void lower_static_functionals(Lowering& l) {
  for (ir::Node* node : l.gm.graph().node_list()) lower_static_functional(l, node);
}

void lower_dynamic_functionals(Lowering& l) {
  std::vector<ir::Node*> nodes = l.gm.graph().node_list();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) lower_dynamic_functional(l, *it);
}

void lower_binary_ops(Lowering& l) {
  for (ir::Node* node : l.gm.graph().node_list()) lower_binary_op(l, node);
}

void fold_weights(Lowering& l) {
  AttrNamer namer(l.gm);
  for (ir::Node* node : l.gm.graph().node_list()) {
    if (!is_prepack(*node) || node->users().empty()) continue;
    std::unordered_set<const ir::Node*> producers = producers_of(node);
    if (producers.empty()) continue;
    c10::IValue packed = evaluate(l, node, producers);
    ir::Node* attr = nullptr;
    {
      auto guard = l.gm.graph().inserting_before(node);
      attr = namer.add(scope_of(node->users()[0]) + "_packed_weight_", packed);
    }
    node->replace_all_uses_with(attr);
    l.gm.graph().erase_node(node);
    l.changed = true;
  }
}

}  // namespace qfx::passes::detail
