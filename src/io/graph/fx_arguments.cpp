// FX's argument conventions: which inputs of an ATen call become positional
// args, which kwargs, and which are left out at their default; the ATen -> FX
// table's rows applied to them.

#include "qfx/io/graph_builder.h"

#include "qfx/ir/aten_ops.h"

#include <algorithm>
#include <numeric>

namespace qfx::io {
namespace {

bool static_equals(const c10::IValue& a, const c10::IValue& b) {
  if (a.isNone() || b.isNone()) return a.isNone() && b.isNone();
  if ((a.isInt() || a.isDouble() || a.isBool()) && (b.isInt() || b.isDouble() || b.isBool())) {
    return a.toScalar().toDouble() == b.toScalar().toDouble();
  }
  if (a.isString() && b.isString()) return a.toStringRef() == b.toStringRef();
  if (a.isList() && b.isList()) {
    auto x = a.toListRef();
    auto y = b.toListRef();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!static_equals(x[i], y[i])) return false;
    }
    return true;
  }
  return false;
}

// Which inputs become positional FX args (trailing defaults dropped) and which
// become kwargs (keyword-only ones not at their default).
struct ArgumentSplit {
  std::vector<int> positional;
  std::vector<int> keyword;
};

ArgumentSplit split_arguments(const std::vector<c10::Argument>& schema, const std::vector<OpInput>& inputs,
                              const std::vector<int>& order) {
  ArgumentSplit split;
  for (int i : order) {
    if (!schema[i].kwarg_only()) {
      split.positional.push_back(i);
    } else if (!is_default(schema[i], inputs[i])) {
      split.keyword.push_back(i);
    }
  }
  while (!split.positional.empty() && is_default(schema[split.positional.back()], inputs[split.positional.back()])) {
    split.positional.pop_back();
  }
  return split;
}

/// How FX records a call of a Python function of torch.nn.functional: its
/// handle_torch_function passes the leading Tensor parameters positionally
/// and the rest by keyword (`F.relu(x, True)` is recorded as
/// `relu(x, inplace=True)`); here the keywords at their default are left out.
ArgumentSplit split_as_torch_function(const std::vector<c10::Argument>& schema, const std::vector<OpInput>& inputs) {
  ArgumentSplit split;
  size_t i = 0;
  for (; i < inputs.size() && schema[i].type()->kind() == c10::TypeKind::TensorType; ++i) {
    split.positional.push_back(static_cast<int>(i));
  }
  for (; i < inputs.size(); ++i) {
    if (!is_default(schema[i], inputs[i])) split.keyword.push_back(static_cast<int>(i));
  }
  return split;
}

std::vector<int> all_indices(size_t n) {
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  return order;
}

}  // namespace

bool is_default(const c10::Argument& schema_arg, const OpInput& input) {
  return input.constant && schema_arg.default_value() && static_equals(*input.constant, *schema_arg.default_value());
}

bool merge_index(ir::Argument::Items& outer, const ir::Argument::Items& inner) {
  const ir::Argument whole = ir::Argument::slice({}, {}, {});
  for (const ir::Argument& part : outer) {
    if (part.kind() != ir::Argument::Kind::kSlice) return false;
  }
  for (size_t k = 0; k < inner.size(); ++k) {
    if (k >= outer.size()) {
      outer.push_back(inner[k]);
    } else if (outer[k] == whole) {
      outer[k] = inner[k];
    } else if (inner[k] != whole) {
      return false;
    }
  }
  return true;
}

ir::Argument GraphBuilder::argument(const OpInput& input, const c10::TypePtr& type) {
  if (input.value) return input.value(type);
  return constant(input.constant.value_or(c10::IValue()), type);
}

ir::Node* GraphBuilder::call_node(ir::Opcode op, const std::string& target, const std::vector<c10::Argument>& schema,
                                  const std::vector<OpInput>& inputs, const std::vector<int>& positional,
                                  const std::vector<int>& keyword, bool inplace) {
  std::vector<ir::Argument> args;
  for (int i : positional) args.push_back(argument(inputs[i], schema[i].real_type()));
  ir::Kwargs kwargs;
  for (int i : keyword) kwargs.emplace_back(schema[i].name(), argument(inputs[i], schema[i].real_type()));
  if (inplace) kwargs.emplace_back("inplace", true);
  return call(op, target, std::move(args), std::move(kwargs));
}

ir::Node* GraphBuilder::call_mapped(const std::string& aten, const std::vector<c10::Argument>& schema,
                                    const std::vector<OpInput>& inputs) {
  const ir::OpMapping* m = ir::find_op_mapping(aten);
  if (m == nullptr) fail("unsupported op " + aten);
  std::vector<int> order = m->order.empty() ? all_indices(inputs.size()) : m->order;
  for (size_t i = 0; i < inputs.size(); ++i) {
    bool selected = std::find(order.begin(), order.end(), static_cast<int>(i)) != order.end();
    // ATen's cudnn_enabled (batch_norm, instance_norm) and cudnn_enable (layer_norm, group_norm) are
    // torch.backends.cudnn.enabled, no argument of F's
    bool cudnn = schema[i].name() == "cudnn_enabled" || schema[i].name() == "cudnn_enable";
    if (!selected && !is_default(schema[i], inputs[i]) && !cudnn) {
      fail("cannot express argument '" + schema[i].name() + "' of " + aten);
    }
  }
  ArgumentSplit split = split_arguments(schema, inputs, order);
  std::string target = m->target;
  bool fits = m->max_positional < 0 ||
              (static_cast<int>(split.positional.size()) <= m->max_positional && split.keyword.empty());
  if (!fits) {
    if (*m->fallback == '\0') fail("cannot express the arguments of " + aten);
    target = m->fallback;
  }
  return call_node(m->op, target, schema, inputs, split.positional, split.keyword, m->inplace);
}

ir::Node* GraphBuilder::call_op(const std::string& target, const std::vector<c10::Argument>& schema,
                                const std::vector<OpInput>& inputs) {
  ArgumentSplit split = split_arguments(schema, inputs, all_indices(inputs.size()));
  return call_node(ir::Opcode::kCallFunction, target, schema, inputs, split.positional, split.keyword, false);
}

ir::Node* GraphBuilder::call_torch_function(const std::string& name, const std::vector<c10::Argument>& schema,
                                            const std::vector<OpInput>& inputs) {
  ArgumentSplit split = split_as_torch_function(schema, inputs);
  return call_node(ir::Opcode::kCallFunction, name, schema, inputs, split.positional, split.keyword, false);
}

}  // namespace qfx::io
