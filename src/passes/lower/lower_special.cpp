// lower-to-native, special patterns (PyTorch's special_pattern_replacement):
// dequantize - op - quantize around ops that run on quantized tensors as
// they are (pooling, relu, reshape, cat, ...), that become quantized modules
// (BatchNorm2d, Hardswish, LayerNorm, ...) or quantized ops
// (F.hardswish -> quantized.hardswish) lose their dequantize and quantize.
// Also getattr(x, "shape") reads the quantized tensor directly.

#include "lowering.h"

#include "lower_tables.h"

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
  l.gm.graph().erase_node(ref);
}

bool is_to_float16(const ir::Node& node) {
  return is_call(node, ir::Opcode::kCallMethod, "to") && node.args().size() == 2 &&
         node.args()[1].kind() == ir::Argument::Kind::kDtype && node.args()[1].to_dtype() == c10::kHalf;
}

/// Swaps a special module for its quantized form; false if it cannot be built.
bool swap_special_module(Lowering& l, ir::Node& ref, const ir::Node& q) {
  const ModuleLowering* row = find_module_lowering(special_module_lowerings(), *l.module(&ref));
  if (row == nullptr) return true;
  auto quantized = l.make_quantized(ref, row->quantized_type, output_qparams(l, q));
  if (!quantized) return false;
  l.swap_in(ref.target(), quantized);
  return true;
}

void lower_special_pattern(Lowering& l, ir::Node* q) {
  bool is_quantize = is_call(*q, ir::Opcode::kCallFunction, "torch.quantize_per_tensor");
  bool to_fp16 = is_to_float16(*q);
  if (!is_quantize && !to_fp16) return;
  if (q->args().empty() || !q->args()[0].is_node()) return;
  ir::Node* ref = q->args()[0].to_node();
  if (to_fp16 && (find_in(fixed_qparams_nodes(), *ref, l.gm).any() || find_in(default_nodes(), *ref, l.gm).any())) {
    return;
  }
  ListHit special = find_special_pattern(*ref, l.gm);
  if (!special.any()) return;
  std::vector<ir::Node*> dqs = dequantized_inputs(*ref);
  if (dqs.empty()) return;
  if (special.module && is_quantize && !swap_special_module(l, *ref, *q)) return;
  for (ir::Node* dq : dqs) ref->replace_input_with(dq, dq->args()[0].to_node());
  std::vector<ir::Argument> qparams(q->args().begin() + 1, q->args().end());
  q->replace_all_uses_with(ref);
  l.gm.graph().erase_node(q);
  l.changed = true;
  if (find_in(default_nodes(), *ref, l.gm).function) {
    replace_with_quantized_op(l, ref, qparams.at(0), qparams.at(1));
    return;
  }
  for (const ir::Argument& a : qparams) {
    if (a.is_node() && a.to_node()->users().empty()) l.gm.graph().erase_node(a.to_node());
  }
}

}  // namespace

void lower_special_patterns(Lowering& l) {
  for (ir::Node* node : l.gm.graph().node_list()) lower_special_pattern(l, node);
}

void lower_getattr_metadata(Lowering& l) {
  for (ir::Node* node : l.gm.graph().node_list()) {
    if (!is_call(*node, ir::Opcode::kCallFunction, "getattr") || node->args().size() < 2) continue;
    const ir::Argument& attr = node->args()[1];
    if (attr.kind() != ir::Argument::Kind::kString || attr.to_string() != "shape" || !is_dequantize(node->args()[0])) {
      continue;
    }
    node->set_arg(0, node->args()[0].to_node()->args()[0]);
    l.changed = true;
  }
}

}  // namespace qfx::passes::detail
