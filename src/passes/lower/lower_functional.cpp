// lower-to-native, functional steps: F.linear / F.conv*d between dequantize
// and quantize become quantized.linear / conv*d (with relu) on a prepacked
// weight; dynamic ones become linear_dynamic; add / mul / matmul become
// quantized.add / add_relu / mul / matmul. Then fold_weights packs each
// weight once and stores it as an attribute.

#include "lowering.h"
#include "qfx/ir/op_names.h"

#include "passes/attr_names.h"
#include "lower_tables.h"
#include "lower_terms.h"

#include "qfx/ir/interpreter.h"
#include "qfx/ir/module_registry.h"

#include <unordered_set>

namespace qfx::passes::detail {
namespace {

/// Spatial dimensions of a functional conv (`torch.nn.functional.conv2d` -> 2), 0 for others.
int64_t conv_dims(const ir::Node& func) {
  const std::string name = function_name(func);
  const std::string prefix = ir::op::kFunctionalConvPrefix;
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

const char* const kStaticFunction = "a functional lowered statically";
const char* const kDynamicFunction = "a functional lowered dynamically";
const char* const kBinaryOp = "a binary op";

/// F.linear / conv between dequantize and quantize becomes its quantized op
/// (with relu when one followed) on the prepacked quantized weight, with the
/// quantize node's scale and zero point.
Decline lower_static_functional(Lowering& l, const RuleMatch& m) {
  ir::Node* func = m.anchor_node();
  if (node_has_none_qconfig(*func)) return "its qconfig is None";
  ir::Node* q = m.output();
  if (std::string why = read_as_float(*func, *q); !why.empty()) return why;
  ir::Node* relu = q->args()[0].to_node() != func ? q->args()[0].to_node() : nullptr;
  ir::Node* input_dq = func->args()[0].to_node();
  ir::Node* weight = func->args()[1].to_node()->args()[0].to_node();
  const FunctionLowering* row = find_function_lowering(static_function_lowerings(), *func);
  ir::Node* scale = q->args()[1].to_node();
  ir::Node* zero_point = q->args()[2].to_node();
  ir::Node* packed = nullptr;
  {
    auto guard = l.gm.graph().inserting_before(scale);
    packed = l.gm.graph().call_function(prepack_op(row->function, weight->args().back().to_dtype()),
                                        prepack_args(*func, weight));
  }
  func->set_target(relu != nullptr ? row->relu_op : row->op);
  func->set_args({input_dq->args()[0], packed, scale, zero_point});
  q->replace_all_uses_with(func);
  zero_point->append(func);
  l.erase(q);
  if (relu != nullptr) l.erase(relu);
  return "";
}

const std::vector<RewriteRule<Lowering>>& static_functional_rules() {
  static const std::vector<RewriteRule<Lowering>> rules = [] {
    using namespace terms;
    Term func = function_in(kStaticFunction, static_function_lowerings())
                    .of({dequantize(), dequantize(quantize_weight())})
                    .and_more();
    return std::vector<RewriteRule<Lowering>>{
        // dq, dq(q weight) -> F.linear/conv -> relu -> q  =>  quantized.linear_relu / conv2d_relu, prepacked weight
        {"static functional + relu", quantize(relu(func)), kStaticFunction, lower_static_functional},
        // dq, dq(q weight) -> F.linear/conv -> q  =>  quantized.linear / conv2d, prepacked weight
        {"static functional", quantize(func), kStaticFunction, lower_static_functional},
    };
  }();
  return rules;
}

/// quantize_per_tensor_dynamic - dequantize - F.linear (- relu) becomes
/// linear_dynamic (linear_relu_dynamic, or the fp16 ops) on the prepacked weight.
Decline lower_dynamic_functional(Lowering& l, const RuleMatch& m) {
  ir::Node* func = m.anchor_node();
  if (node_has_none_qconfig(*func)) return "its qconfig is None";
  ir::Node* relu = m.output() != func ? m.output() : nullptr;
  ir::Node* input_q = func->args()[0].to_node()->args()[0].to_node();
  c10::ScalarType compute = input_q->args().at(1).to_dtype();
  bool is_fp16 = compute == c10::kHalf, is_int8 = compute == c10::kQUInt8 || compute == c10::kQInt8;
  if (!is_int8 && !is_fp16) return std::string("its input is quantized dynamically to ") + c10::toString(compute);
  ir::Node* weight = func->args()[1].to_node()->args()[0].to_node();
  c10::ScalarType weight_dtype = weight->args().back().to_dtype();
  const FunctionLowering* row = nullptr;
  for (const FunctionLowering& r : dynamic_function_lowerings()) {
    if (r.function == function_name(*func) && r.activation == compute && r.weight == weight_dtype) row = &r;
  }
  if (row == nullptr) return l.refuse(*func, "no dynamic quantized op for these dtypes");
  if (std::string(row->relu_op).empty()) {
    return l.refuse(*func, "no dynamic quantized op with relu for " + function_name(*func));
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
    l.erase(relu);
  }
  return "";
}

const std::vector<RewriteRule<Lowering>>& dynamic_functional_rules() {
  static const std::vector<RewriteRule<Lowering>> rules = [] {
    using namespace terms;
    Term func = function_in(kDynamicFunction, dynamic_function_lowerings())
                    .of({dequantize(quantize_dynamic()), dequantize(quantize_weight())})
                    .and_more();
    return std::vector<RewriteRule<Lowering>>{
        // q_dynamic -> dq, dq(q weight) -> F.linear -> relu  =>  quantized.linear_relu_dynamic
        {"dynamic functional + relu", dynamic_relu(func), kDynamicFunction, lower_dynamic_functional},
        // q_dynamic -> dq, dq(q weight) -> F.linear  =>  quantized.linear_dynamic
        {"dynamic functional", func, kDynamicFunction, lower_dynamic_functional},
    };
  }();
  return rules;
}

/// add / mul (/ matmul) between dequantize and quantize becomes its
/// quantized op (with relu when one followed) on the quantized operands.
Decline lower_binary_op(Lowering& l, const RuleMatch& m) {
  ir::Node* op = m.anchor_node();
  if (node_has_none_qconfig(*op)) return "its qconfig is None";
  ir::Node* q = m.output();
  ir::Node* relu = q->args()[0].to_node() != op ? q->args()[0].to_node() : nullptr;
  if (!is_dequantize(op->args()[0]) && !is_dequantize(op->args()[1])) return "neither operand is dequantized";
  const FunctionLowering* row = find_function_lowering(binary_op_lowerings(), *op);
  std::string qop = relu != nullptr ? row->relu_op : row->op;
  if (qop.empty()) return l.refuse(*op, "no quantized " + function_name(*op) + " with relu");
  size_t dequantized = 0;
  for (const ir::Argument& arg : std::vector<ir::Argument>(op->args())) {
    if (!is_dequantize(arg)) continue;
    op->replace_input_with(arg.to_node(), arg.to_node()->args()[0].to_node());
    ++dequantized;
  }
  std::vector<ir::Argument> args = op->args();
  if (dequantized == 2) args.insert(args.end(), {q->args()[1], q->args()[2]});
  ir::Node* lowered = nullptr;
  {
    auto guard = l.gm.graph().inserting_after(q);
    lowered = l.gm.graph().call_function(qop, args);
    lowered->meta() = op->meta();
  }
  q->replace_all_uses_with(lowered);
  l.erase(q);
  if (relu != nullptr) l.erase(relu);
  l.erase(op);
  return "";
}

const std::vector<RewriteRule<Lowering>>& binary_op_rules() {
  static const std::vector<RewriteRule<Lowering>> rules = [] {
    using namespace terms;
    Term op = function_in(kBinaryOp, binary_op_lowerings())
                  .of({dequantized_or_constant(), dequantized_or_constant()})
                  .and_more();
    return std::vector<RewriteRule<Lowering>>{
        // dq, dq -> add/mul -> relu -> q  =>  quantized.add_relu / mul_relu
        {"binary op + relu", quantize(relu(op)), kBinaryOp, lower_binary_op},
        // dq, dq -> add/mul/matmul -> q  =>  quantized.add / mul / matmul (scalar operands: add_scalar, ...)
        {"binary op", quantize(op), kBinaryOp, lower_binary_op},
    };
  }();
  return rules;
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
      if (nodes.insert(input).second && !is_call(*input, ir::Opcode::kCallFunction, ir::op::kGetattr))
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

void lower_static_functionals(Lowering& l) { l.run_rules(static_functional_rules(), l, {}); }

// From the output backwards, as PyTorch: a relu claims its linear first.
void lower_dynamic_functionals(Lowering& l) { l.run_rules(dynamic_functional_rules(), l, {Walk::kBackward}); }

void lower_binary_ops(Lowering& l) { l.run_rules(binary_op_rules(), l, {}); }

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
