// lower-to-native, special patterns (PyTorch's special_pattern_replacement):
// dequantize - op - quantize around ops that run on quantized tensors as
// they are (pooling, relu, reshape, cat, ...), that become quantized modules
// (BatchNorm2d, Hardswish, LayerNorm, ...) or quantized ops
// (F.hardswish -> quantized.hardswish) lose their dequantize and quantize.
// Also getattr(x, "shape") reads the quantized tensor directly.

#include "lowering.h"
#include "qfx/ir/op_names.h"

#include "lower_tables.h"
#include "lower_terms.h"

#include <algorithm>

namespace qfx::passes::detail {
namespace {

/// The dequantize nodes feeding `ref`'s first argument (one, or a list for
/// cat), or empty when it is not all dequantize nodes.
std::vector<ir::Node*> dequantized_inputs(const ir::Node& ref) {
  if (ref.args().empty()) return {};
  const ir::Argument& first = ref.args()[0];
  std::vector<ir::Node*> dqs;
  if (first.is_node()) {
    if (!is_dequantize(first)) return {};
    return {first.to_node()};
  }
  if (!first.has_items() || first.items().empty()) return {};
  for (const ir::Argument& item : first.items()) {
    if (!is_dequantize(item)) return {};
    dqs.push_back(item.to_node());
  }
  return dqs;
}

/// `ref`'s arguments as PyTorch's functional records them: input (and
/// positional parameters) by position, the rest by keyword with defaults.
std::pair<std::vector<ir::Argument>, ir::Kwargs> python_call(const ir::Node& ref, const DefaultFunctionLowering& row) {
  std::vector<ir::Argument> args = {ref.args().at(0)};
  ir::Kwargs kwargs;
  for (size_t i = 0; i < row.params.size(); ++i) {
    const PythonParam& p = row.params[i];
    const ir::Argument* given = i + 1 < ref.args().size() ? &ref.args()[i + 1] : ref.kwarg(p.name);
    ir::Argument value = given != nullptr ? *given : p.default_value;
    if (p.positional) {
      args.push_back(value);
    } else {
      kwargs.emplace_back(p.name, value);
    }
  }
  return {args, kwargs};
}

/// The default node `ref` (F.hardswish, ...) becomes its quantized op with
/// the quantize node's scale and zero point as keyword arguments.
void replace_with_quantized_op(Lowering& l, ir::Node* ref, const ir::Argument& scale, const ir::Argument& zero_point) {
  const DefaultFunctionLowering* row = nullptr;
  for (const DefaultFunctionLowering& r : default_function_lowerings()) {
    if (function_name(*ref) == r.function) row = &r;
  }
  TORCH_CHECK(row != nullptr, "no quantized op for ", ref->target());
  auto [args, all_kwargs] = python_call(*ref, *row);
  ir::Kwargs kwargs;
  for (const auto& kv : all_kwargs) {
    if (std::find(row->dropped.begin(), row->dropped.end(), kv.first) == row->dropped.end()) kwargs.push_back(kv);
  }
  kwargs.emplace_back("output_scale", scale);
  kwargs.emplace_back("output_zero_point", zero_point);
  auto guard = l.gm.graph().inserting_after(zero_point.to_node());
  ir::Node* qop = l.gm.graph().call_function(row->op, args, kwargs);
  qop->meta() = ref->meta();
  ref->replace_all_uses_with(qop);
  l.erase(ref);
}

const char* const kSpecialOp = "an op on quantized tensors";

/// Swaps a special module for its quantized form; false if it cannot be built.
bool swap_special_module(Lowering& l, ir::Node& ref, const ir::Node& q) {
  const ModuleLowering* row = find_module_lowering(special_module_lowerings(), *l.module(&ref));
  if (row == nullptr) return true;
  auto quantized = l.make_quantized(ref, row->quantized_type, output_qparams(l, q));
  if (!quantized) return false;
  l.swap_in(ref.target(), quantized);
  return true;
}

/// The op reads the quantized values its dequantize nodes read, and its
/// output replaces the quantize node's; a default op becomes its quantized op.
Decline lower_special_pattern(Lowering& l, const RuleMatch& m) {
  ir::Node* q = m.output();
  ir::Node* ref = m.anchor_node();
  // PyTorch 1.13 lowers it all the same, on the quantized kernel and its
  // input's qparams: a node left float would not be (docs/divergences.md).
  if (node_has_none_qconfig(*ref)) return "its qconfig is None: it runs on float values, as in the reference model";
  if (std::string why = read_as_float(*ref, *q); !why.empty()) return why;
  bool is_quantize = is_call(*q, ir::Opcode::kCallFunction, ir::op::kQuantizePerTensor);
  if (!is_quantize &&
      (find_in(fixed_qparams_nodes(), *ref, l.gm).any() || find_in(default_nodes(), *ref, l.gm).any())) {
    return "fixed-qparams and default ops stay float16 reference";
  }
  if (find_special_pattern(*ref, l.gm).module && is_quantize && !swap_special_module(l, *ref, *q)) {
    return l.refusals.at(ref);
  }
  for (ir::Node* dq : dequantized_inputs(*ref)) ref->replace_input_with(dq, dq->args()[0].to_node());
  std::vector<ir::Argument> qparams(q->args().begin() + 1, q->args().end());
  q->replace_all_uses_with(ref);
  l.erase(q);
  if (find_in(default_nodes(), *ref, l.gm).function) {
    replace_with_quantized_op(l, ref, qparams.at(0), qparams.at(1));
    return "";
  }
  for (const ir::Argument& a : qparams) {
    if (a.is_node() && a.to_node()->users().empty()) l.erase(a.to_node());
  }
  return "";
}

/// getattr(x, "shape") reads the quantized tensor.
Decline lower_shape(Lowering&, const RuleMatch& m) {
  ir::Node* node = m.output();
  node->set_arg(0, node->args()[0].to_node()->args()[0]);
  return "";
}

}  // namespace

void lower_special_patterns(Lowering& l) {
  using namespace terms;
  static const std::vector<RewriteRule<Lowering>> rules = {
      // dq -> pooling / relu / reshape / cat / BatchNorm / hardswish ... -> q  =>  the op (or its quantized
      // module or op) on the quantized values
      {"special pattern", quantize_or_to_float16().of({special_op().of({dequantized_inputs()}).and_more()}), kSpecialOp,
       lower_special_pattern},
  };
  l.run_rules(rules, l, {});
}

void lower_getattr_metadata(Lowering& l) {
  using namespace terms;
  static const std::vector<RewriteRule<Lowering>> rules = {
      // getattr(dq(x), "shape")  =>  getattr(x, "shape")
      {"tensor metadata", Term::function(ir::op::kGetattr).of({dequantize(), shape_name()}).and_more(),
       ir::op::kGetattr, lower_shape},
  };
  l.run_rules(rules, l, {});
}

}  // namespace qfx::passes::detail
