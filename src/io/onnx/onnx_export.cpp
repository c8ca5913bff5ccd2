// The ONNX export driver: the example runs (onnx_example.cpp), then the graph's nodes
// top to bottom through the rule tables (onnx_rules.h), graph inputs and
// outputs declared, ONNX's shape inference and checker, serialization.

#include "qfx/io/onnx_export.h"

#include "onnx_rules.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <unordered_map>

namespace qfx::io {
namespace {

using onnx_export::Context;
using onnx_export::ExportState;
using onnx_export::Value;

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
    case K::kTuple:
    case K::kSlice: {
      std::vector<Value> items;
      for (const ir::Argument& item : a.items()) items.push_back(value_of(item, values, node));
      return a.kind() == K::kSlice ? Value::slice(std::move(items)) : Value::list(std::move(items));
    }
    case K::kEllipsis: return Value::ellipsis();
    default: break;
  }
  TORCH_CHECK(false, "ONNX export: node %", node.name(), ": an argument (layout or memory format) has no ONNX form");
}

Value node_value(ExportState& state, const ir::Node& node, const std::unordered_map<const ir::Node*, Value>& values) {
  if (node.op() == ir::Opcode::kPlaceholder) return Value::tensor(node.name());
  if (node.op() == ir::Opcode::kGetAttr) return Value::of_constant(state.gm.get_attr(node.target()));
  auto known = state.run.known.find(&node);
  if (known != state.run.known.end()) return Value::of_constant(known->second);
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

/// The tensors of output Value `v`, with the example run's output `example`
/// for each: tuples and lists flattened in order.
void flatten_outputs(const Context& c, const Value& v, const c10::IValue& example,
                     std::vector<std::pair<Value, at::Tensor>>& out) {
  if (v.kind != Value::Kind::kList) {
    if (!example.isTensor()) c.fail("an output is not a tensor");
    out.emplace_back(v, example.toTensor());
    return;
  }
  std::vector<c10::IValue> items;
  if (example.isTuple()) items = example.toTupleRef().elements().vec();
  if (example.isList()) items = example.toListRef().vec();
  if (items.size() != v.items.size()) c.fail("an output is neither a tensor nor a tuple or list of tensors");
  for (size_t i = 0; i < items.size(); ++i) flatten_outputs(c, v.items[i], items[i], out);
}

/// The graph's outputs: the tensors of the result, tuples and lists
/// flattened, named `output` or `output_<i>`.
void add_outputs(onnx::GraphProto& graph, ExportState& state, const ir::Node& output, const Value& result,
                 const c10::IValue& example, bool dynamic_batch) {
  Context c(state, output, {}, {});
  std::vector<std::pair<Value, at::Tensor>> outs;
  flatten_outputs(c, result, example, outs);
  TORCH_CHECK(!outs.empty(), "ONNX export: the model returns no tensor");
  for (size_t i = 0; i < outs.size(); ++i) {
    const auto& [value, tensor] = outs[i];
    std::string name = outs.size() == 1 ? "output" : "output_" + std::to_string(i);
    state.graph.node("Identity", {c.tensor(value)}, name);
    onnx::ValueInfoProto* info = graph.add_output();
    info->set_name(name);
    set_type(*info, tensor.scalar_type(), tensor.sizes().vec(), dynamic_batch);
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
  for (const ir::Node* node : gm.graph().nodes()) {  // before the example run, which would refuse its inputs
    auto declared = node->meta().find(ir::kInputTypeMeta);
    if (node->op() != ir::Opcode::kPlaceholder || declared == node->meta().end()) continue;
    const std::string& type = std::any_cast<const std::string&>(declared->second);
    TORCH_CHECK(type == "Tensor", "ONNX export: input %", node->name(), " is a ", type, "; ONNX inputs are tensors");
  }
  onnx_export::ExampleRun run = onnx_export::run_example(gm, example_inputs, options.dynamic_batch);

  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("qfx");
  model.set_producer_version("0.1.0");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(options.opset);
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name(gm.class_name());

  onnx_export::OnnxGraph builder(graph, options.opset);
  ExportState state{builder, gm, run, {}};
  std::unordered_map<const ir::Node*, Value> values;
  for (const ir::Node* node : gm.graph().nodes()) {
    if (node->op() == ir::Opcode::kOutput) {
      add_outputs(graph, state, *node, value_of(node->args().at(0), values, *node), run.output, options.dynamic_batch);
      break;
    }
    if (node->op() == ir::Opcode::kPlaceholder) {
      TORCH_CHECK(run.shapes.count(node), "ONNX export: input %", node->name(), " is not a tensor");
      builder.fresh(node->name());
      set_type(*graph.add_input(), run.dtypes.at(node), run.shapes.at(node), options.dynamic_batch);
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
