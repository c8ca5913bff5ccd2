// The terms of lower-to-native's patterns: ops by name, and classes by
// the lowering tables.

#include "lower_terms.h"
#include "qfx/ir/op_names.h"

#include "passes/qdq_edits.h"
#include "qfx/ir/module_registry.h"

namespace qfx::passes::detail::terms {
namespace {

std::shared_ptr<torch::nn::Module> module_of(const ir::Argument& value, const ir::GraphModule& gm) {
  if (!value.is_node() || value.to_node()->op() != ir::Opcode::kCallModule) return nullptr;
  return gm.find_submodule(value.to_node()->target());
}

bool is_function(const ir::Argument& value, std::initializer_list<const char*> names) {
  if (!value.is_node() || value.to_node()->op() != ir::Opcode::kCallFunction) return false;
  std::string name = function_name(*value.to_node());
  for (const char* n : names) {
    if (name == n) return true;
  }
  return false;
}

bool is_module_type(const ir::Argument& value, const ir::GraphModule& gm, const char* type) {
  auto m = module_of(value, gm);
  return m != nullptr && ir::module_type_name(*m) == type;
}

}  // namespace

Term dequantize(Term input) { return Term::method(ir::op::kDequantize).of({std::move(input)}); }

Term quantize(Term input) { return Term::function(ir::op::kQuantizePerTensor).of({std::move(input)}).and_more(); }

Term quantize_dynamic() { return Term::function(ir::op::kQuantizePerTensorDynamic); }

Term quantize_weight() {
  return Term::of_class("torch.quantize_per_tensor/per_channel", [](const ir::Argument& v, const ir::GraphModule&) {
    return is_function(v, {ir::op::kQuantizePerTensor, ir::op::kQuantizePerChannel});
  });
}

Term relu(Term input) {
  return Term::of_class("relu",
                        [](const ir::Argument& v, const ir::GraphModule& gm) {
                          return is_function(v, {ir::op::kFunctionalRelu, ir::op::kTorchRelu}) ||
                                 is_module_type(v, gm, ir::op::kReLU);
                        })
      .of({std::move(input)})
      .and_more();
}

Term dynamic_relu(Term input) {
  return Term::of_class("relu",
                        [](const ir::Argument& v, const ir::GraphModule& gm) {
                          return is_function(v, {ir::op::kFunctionalRelu}) || is_module_type(v, gm, ir::op::kReLU);
                        })
      .of({std::move(input)})
      .and_more();
}

Term module_in(const char* description, const std::vector<ModuleLowering>& table) {
  return Term::of_class(description, [&table](const ir::Argument& v, const ir::GraphModule& gm) {
    auto m = module_of(v, gm);
    return m != nullptr && find_module_lowering(table, *m) != nullptr;
  });
}

Term function_in(const char* description, const std::vector<FunctionLowering>& table) {
  return Term::of_class(description, [&table](const ir::Argument& v, const ir::GraphModule&) {
    return v.is_node() && find_function_lowering(table, *v.to_node()) != nullptr;
  });
}

Term special_op() {
  return Term::of_class("an op on quantized tensors", [](const ir::Argument& v, const ir::GraphModule& gm) {
    return v.is_node() && find_special_pattern(*v.to_node(), gm).any();
  });
}

Term dequantized_or_constant() {
  return Term::of_class("dequantized or a constant",
                        [](const ir::Argument& v, const ir::GraphModule&) { return is_dequantize(v) || !v.is_node(); });
}

Term dequantized_inputs() {
  return Term::of_class("dequantized", [](const ir::Argument& v, const ir::GraphModule&) {
    if (v.is_node()) return is_dequantize(v);
    if (!v.has_items() || v.items().empty()) return false;
    for (const ir::Argument& item : v.items()) {
      if (!is_dequantize(item)) return false;
    }
    return true;
  });
}

Term quantize_or_to_float16() {
  return Term::of_class("torch.quantize_per_tensor or to(torch.float16)",
                        [](const ir::Argument& v, const ir::GraphModule&) {
                          if (is_function(v, {ir::op::kQuantizePerTensor})) return true;
                          if (!v.is_node()) return false;
                          const ir::Node& n = *v.to_node();
                          return n.op() == ir::Opcode::kCallMethod && n.target() == ir::op::kTo &&
                                 n.args().size() == 2 && n.args()[1].kind() == ir::Argument::Kind::kDtype &&
                                 n.args()[1].to_dtype() == c10::kHalf;
                        })
      .and_more();
}

Term shape_name() {
  return Term::of_class("\"shape\"", [](const ir::Argument& v, const ir::GraphModule&) {
    return v.kind() == ir::Argument::Kind::kString && v.to_string() == "shape";
  });
}

}  // namespace qfx::passes::detail::terms
