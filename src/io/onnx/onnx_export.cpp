// The ONNX export driver: one example run for shapes, then the graph's nodes
// top to bottom through the rule tables (onnx_rules.h), graph inputs and
// outputs declared, ONNX's shape inference and checker, serialization.

#include "qfx/io/onnx_export.h"

#include "onnx_rules.h"

#include "qfx/ir/interpreter.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <unordered_map>

namespace qfx::io {
namespace {

using onnx_export::Context;
using onnx_export::ExportState;
using onnx_export::NodeShapes;
using onnx_export::Value;

/// The sizes of every tensor node's value on `inputs`.
NodeShapes example_shapes(const ir::GraphModule& gm, const std::vector<c10::IValue>& inputs,
                          std::unordered_map<const ir::Node*, c10::ScalarType>& dtypes) {
  NodeShapes shapes;
  ir::Interpreter interpreter(gm);
  interpreter.set_node_hook([&](const ir::Node& node, const c10::IValue& value) {
    if (!value.isTensor()) return;
    shapes[&node] = value.toTensor().sizes().vec();
    dtypes[&node] = value.toTensor().scalar_type();
  });
  interpreter.run(inputs);
  return shapes;
}

/// An IR argument as an export Value.
Value value_of(const ir::Argument& a, const std::unordered_map<const ir::Node*, Value>& values, const ir::Node& node) {
  using K = ir::Argument::Kind;
  switch (a.kind()) {
    case K::kNone: return Value{};
    case K::kNode: return values.at(a.to_node());
    case K::kBool: return Value::of_constant(a.to_bool());
    case K::kInt: return Value::of_constant(a.to_int());
    case K::kDouble: return Value::of_constant(a.to_double());
    case K::kString: return Value::of_constant(a.to_string());
    case K::kDtype: return Value::of_constant(static_cast<int64_t>(a.to_dtype()));
    case K::kList:
    case K::kTuple: {
      std::vector<Value> items;
      for (const ir::Argument& item : a.items()) items.push_back(value_of(item, values, node));
      return Value::list(std::move(items));
    }
    default: break;
  }
  TORCH_CHECK(false, "ONNX export: node %", node.name(),
              ": an argument (slice, ellipsis, layout or memory format) "
              "has no ONNX form");
}

Value node_value(ExportState& state, const ir::Node& node, const std::unordered_map<const ir::Node*, Value>& values) {
  if (node.op() == ir::Opcode::kPlaceholder) return Value::tensor(node.name());
  if (node.op() == ir::Opcode::kGetAttr) return Value::of_constant(state.gm.get_attr(node.target()));
  std::vector<Value> args;
  for (const ir::Argument& a : node.args()) args.push_back(value_of(a, values, node));
  std::map<std::string, Value> kwargs;
  for (const auto& [key, a] : node.kwargs()) kwargs.emplace(key, value_of(a, values, node));
  Context c(state, node, std::move(args), std::move(kwargs));
  if (node.op() == ir::Opcode::kCallModule) {
    return onnx_export::module_value(c, *state.gm.get_submodule(node.target()), node.target());
  }
  const auto& rules =
      node.op() == ir::Opcode::kCallFunction ? onnx_export::function_rules() : onnx_export::method_rules();
  auto it = rules.find(node.target());
  if (it == rules.end()) c.fail("no ONNX form for this op");
  return it->second(c);
}

void set_type(onnx::ValueInfoProto& info, c10::ScalarType dtype, const std::vector<int64_t>& sizes,
              bool dynamic_batch) {
  auto* type = info.mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx_export::onnx_type(dtype));
  auto* shape = type->mutable_shape();
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i == 0 && dynamic_batch) {
      shape->add_dim()->set_dim_param("batch");
    } else {
      shape->add_dim()->set_dim_value(sizes[i]);
    }
  }
}

/// The graph's outputs: each a tensor Value, named `output` or `output_<i>`.
void add_outputs(onnx::GraphProto& graph, ExportState& state, const ir::Node& output, const Value& result,
                 const std::unordered_map<const ir::Node*, c10::ScalarType>& dtypes, bool dynamic_batch) {
  std::vector<std::pair<Value, const ir::Node*>> outs;
  const ir::Argument& a = output.args().at(0);
  if (a.is_node()) {
    outs.emplace_back(result, a.to_node());
  } else if (a.has_items()) {
    for (size_t i = 0; i < a.items().size(); ++i) {
      TORCH_CHECK(a.items()[i].is_node(), "ONNX export: output ", i, " is not a tensor");
      outs.emplace_back(result.items.at(i), a.items()[i].to_node());
    }
  }
  TORCH_CHECK(!outs.empty(), "ONNX export: the model returns no tensor");
  Context c(state, output, {}, {});
  for (size_t i = 0; i < outs.size(); ++i) {
    const auto& [value, node] = outs[i];
    std::string name = outs.size() == 1 ? "output" : "output_" + std::to_string(i);
    if (value.kind == Value::Kind::kList || !dtypes.count(node)) c.fail("an output is not a tensor");
    state.graph.node("Identity", {c.tensor(value)}, name);
    onnx::ValueInfoProto* info = graph.add_output();
    info->set_name(name);
    set_type(*info, dtypes.at(node), state.shapes.at(node), dynamic_batch);
  }
}

/// Full shape inference (errors raised), then the checker.
void check(onnx::ModelProto& model) {
  try {
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(true, 1, true));
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    TORCH_CHECK(false, "ONNX export: the model fails ONNX's shape inference or checker: ", e.what());
  }
}

}  // namespace

std::string onnx_model_bytes(const ir::GraphModule& gm, const std::vector<c10::IValue>& example_inputs,
                             const OnnxExportOptions& options) {
  TORCH_CHECK(options.opset >= kMinOnnxOpset && options.opset <= kMaxOnnxOpset, "ONNX export: opset ", options.opset,
              " is not supported: qfx writes opsets ", kMinOnnxOpset, " to ", kMaxOnnxOpset,
              " (those ONNX's checker here knows)");
  std::unordered_map<const ir::Node*, c10::ScalarType> dtypes;
  NodeShapes shapes = example_shapes(gm, example_inputs, dtypes);

  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("qfx");
  model.set_producer_version("0.1.0");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(options.opset);
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name(gm.class_name());

  onnx_export::GraphBuilder builder(graph, options.opset);
  ExportState state{builder, gm, shapes, {}};
  std::unordered_map<const ir::Node*, Value> values;
  for (const ir::Node* node : gm.graph().nodes()) {
    if (node->op() == ir::Opcode::kOutput) {
      add_outputs(graph, state, *node, value_of(node->args().at(0), values, *node), dtypes, options.dynamic_batch);
      break;
    }
    if (node->op() == ir::Opcode::kPlaceholder) {
      TORCH_CHECK(dtypes.count(node), "ONNX export: input %", node->name(), " is not a tensor");
      builder.fresh(node->name());
      set_type(*graph.add_input(), dtypes.at(node), shapes.at(node), options.dynamic_batch);
      graph.mutable_input(graph.input_size() - 1)->set_name(node->name());
    }
    values.emplace(node, node_value(state, *node, values));
  }
  check(model);
  std::string bytes;
  TORCH_CHECK(model.SerializeToString(&bytes), "ONNX export: the model could not be serialized");
  return bytes;
}

void export_onnx(const ir::GraphModule& gm, const std::vector<c10::IValue>& example_inputs, const std::string& path,
                 const OnnxExportOptions& options, const OutputOptions& output_options) {
  write_output(path, onnx_model_bytes(gm, example_inputs, options), output_options);
}

}  // namespace qfx::io
