// GraphBuilder: turns walked TorchScript calls into FX nodes.
//
//   prim::CallMethod on a leaf module  -> call_module[target=path]
//   prim::CallMethod on another module -> its method graph, walked inline
//   aten op                            -> op table row (or a custom row)
//   tensor attribute / constant        -> get_attr, created at first use

#include "graph_builder.h"
#include "qfx/ir/op_names.h"

#include "leaf_modules.h"
#include "qfx/ir/aten_ops.h"

#include "qfx/ir/graph.h"
#include "qfx/ir/module_registry.h"
#include "qfx/ir/op_registry.h"
#include "qfx/nn/opaque_modules.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <set>

namespace qfx::io::detail {
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

bool is_enum_type(const c10::TypePtr& type, c10::TypeKind kind) {
  if (type == nullptr) return false;
  if (auto optional = type->cast<c10::OptionalType>()) return is_enum_type(optional->getElementType(), kind);
  return type->kind() == kind;
}

bool is_traced_scalar(const at::Tensor& t) {
  return t.dim() == 0 && !t.requires_grad() &&
         (t.scalar_type() == at::kDouble || t.scalar_type() == at::kLong || t.scalar_type() == at::kBool);
}

}  // namespace

bool is_default(const c10::Argument& schema_arg, const ImportValue& value) {
  return value.is_static() && schema_arg.default_value() && static_equals(value.constant, *schema_arg.default_value());
}

std::string python_class_name(const torch::jit::Module& module) {
  return python_qualified_name(module.type()->name()->qualifiedName());
}

std::string public_type_name(const std::string& python_class) {
  size_t modules = python_class.find(".modules.");
  if (python_class.rfind("torch.", 0) != 0 || modules == std::string::npos) return python_class;
  return python_class.substr(0, modules) + python_class.substr(python_class.rfind('.'));
}

ir::Node* GraphBuilder::scoped(ir::Node* node) {
  node->meta()[ir::kScopeMeta] = scopes_.back();
  return node;
}

constexpr const char* kFloatFunctional = "torch.ao.nn.quantized.FloatFunctional";

/// `forward`, `forward1`, `forward2`, ... (a traced module called again) or
/// `forward__0`, ... (a scripted forward with overloads, as LSTM's).
bool is_forward(const std::string& method) {
  if (method.rfind("forward", 0) != 0) return false;
  size_t digits = method.compare(7, 2, "__") == 0 ? 9 : 7;
  return std::all_of(method.begin() + static_cast<std::ptrdiff_t>(std::min(digits, method.size())), method.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

/// torch.nn modules qfx traces through where FX's QuantizationTracer keeps
/// every torch.nn module but Sequential whole: the transformer containers,
/// compositions of Linear, LayerNorm, Dropout and MultiheadAttention, whose
/// layers then quantize as eager mode's quantize_dynamic quantizes them
/// (FX would leave the whole encoder float; docs/divergences.md).
bool traced_through(const std::string& python_class) {
  static const std::set<std::string> containers = {
      "torch.nn.modules.container.Sequential",           "torch.nn.modules.transformer.Transformer",
      "torch.nn.modules.transformer.TransformerEncoder", "torch.nn.modules.transformer.TransformerEncoderLayer",
      "torch.nn.modules.transformer.TransformerDecoder", "torch.nn.modules.transformer.TransformerDecoderLayer",
  };
  return containers.count(python_class) != 0;
}

/// True when a graph branches or loops (a scripted forward; a trace never does).
bool has_control_flow(const torch::jit::Graph& graph) {
  for (const torch::jit::Node* node : graph.nodes()) {
    if (node->kind() == c10::prim::If || node->kind() == c10::prim::Loop) return true;
  }
  return false;
}

bool is_leaf_module(const std::string& python_class) {
  bool under_nn = python_class.rfind("torch.nn.", 0) == 0 || python_class.rfind("torch.ao.nn.", 0) == 0;
  return under_nn && !traced_through(python_class);
}

void GraphBuilder::import_forward(const torch::jit::Module& root) {
  auto method = root.get_method("forward");
  const torch::jit::Graph& graph = *method.graph();
  std::vector<ImportValue> inputs{ImportValue::of_module("", root)};
  for (size_t i = 1; i < graph.inputs().size(); ++i) {
    std::string name = graph.inputs()[i]->debugName();
    name = name.substr(0, name.find('.'));  // "x.1" -> "x"
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) name = "input";
    ir::Node* placeholder = scoped(gm_.graph().placeholder(name));
    placeholder->meta()[ir::kInputTypeMeta] = graph.inputs()[i]->type()->annotation_str();
    inputs.push_back(ImportValue::of_node(placeholder));
  }
  auto outputs = walker_.run(graph, std::move(inputs));
  scoped(gm_.graph().output(to_argument(outputs.at(0))));
}

ImportValue GraphBuilder::call_module(const ImportValue& module, const std::string& method,
                                      std::vector<ImportValue> args) {
  std::string type = python_class_name(*module.module);
  // prepare_fx swaps FloatFunctional for FXFloatFunctional, whose add, mul,
  // cat, ... are the bare ops: no call of its activation_post_process
  if (scopes_.back().module_type == kFloatFunctional && type == "torch.nn.modules.linear.Identity") {
    return args.at(0);
  }
  // FX calls a leaf module's forward (a trace's second call of a module is
  // `forward1`); any other method, FloatFunctional's add included, it traces through.
  if (is_forward(method) && (is_leaf_module(type) || built_leaves_.count(module.path) > 0)) {
    return leaf_call(module, method, std::move(args));
  }
  // A scripted transformer container branches on its input (the fast-path checks): kept whole, float
  if (is_forward(method) && traced_through(type) && has_control_flow(*module.module->get_method(method).graph())) {
    TORCH_WARN("import: module '", module.path, "' (", public_type_name(type),
               ") is scripted with control flow: it runs as TorchScript and stays float (trace the model to "
               "quantize its layers)");
    gm_.add_submodule(module.path, std::make_shared<nn::ScriptModuleImpl>(*module.module, public_type_name(type)));
    built_leaves_.insert(module.path);
    return leaf_call(module, method, std::move(args));
  }
  if (auto whole = kept_whole(module, type)) {
    gm_.add_submodule(module.path, std::move(whole));
    built_leaves_.insert(module.path);
    return leaf_call(module, method, std::move(args));
  }
  std::vector<ImportValue> inputs{module};
  for (auto& a : args) inputs.push_back(std::move(a));
  scopes_.push_back({module.path, public_type_name(type)});
  auto outputs = walker_.run(*module.module->get_method(method).graph(), std::move(inputs));
  scopes_.pop_back();
  return outputs.at(0);
}

namespace {

bool listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool class_listed(const std::vector<std::string>& classes, const std::string& python_class) {
  for (const std::string& wanted : classes) {
    if (nn::class_name_matches(python_class, wanted)) return true;
  }
  return false;
}

}  // namespace

std::shared_ptr<torch::nn::Module> GraphBuilder::kept_whole(const ImportValue& module,
                                                            const std::string& python_class) const {
  if (listed(options_.nested_module_names, module.path) || class_listed(options_.nested_module_classes, python_class)) {
    ImportOptions inner;  // module names are the outer model's; classes hold everywhere
    inner.script_module_classes = options_.script_module_classes;
    inner.nested_module_classes = options_.nested_module_classes;
    return std::make_shared<nn::NestedGraphModuleImpl>(import_torchscript(*module.module, inner), python_class);
  }
  if (listed(options_.script_module_names, module.path) || class_listed(options_.script_module_classes, python_class)) {
    return std::make_shared<nn::ScriptModuleImpl>(*module.module, python_class);
  }
  return nullptr;
}

namespace {

/// ATen ops that need more than a row of the op table: `aten::_convolution`
/// -> `F.conv2d`, `aten::slice` -> `operator.getitem` with slice objects, ...
/// (custom_op).
bool has_custom_mapping(const std::string& aten_name) {
  return aten_name == "aten::_convolution" || aten_name == "aten::slice" || aten_name == "aten::select" ||
         aten_name == "aten::index" || aten_name == "aten::fill_" || aten_name == "aten::copy_" ||
         aten_name == "prim::dtype" || aten_name == "prim::device" || aten_name == "aten::tensor" ||
         aten_name == "aten::_transformer_encoder_layer_fwd" ||
         ir::find_upsample_mapping(aten_name) != nullptr;
}

}  // namespace

std::vector<ImportValue> GraphBuilder::call_op(const torch::jit::Node& node, std::vector<ImportValue> inputs) {
  std::string kind = node.kind().toQualString();
  ImportValue result;
  if (has_custom_mapping(kind)) {
    result = custom_op(node, inputs);
  } else if (ir::find_op_mapping(kind) != nullptr) {
    result = ImportValue::of_node(mapped_op(node, inputs));
  } else {
    walker_.fail("unsupported op " + kind);
  }
  if (node.outputs().size() == 1) return {result};
  std::vector<ImportValue> outputs;
  for (size_t i = 0; i < node.outputs().size(); ++i) outputs.push_back(element(result, static_cast<int64_t>(i)));
  return outputs;
}

ImportValue GraphBuilder::element(const ImportValue& sequence, int64_t index) {
  if (sequence.kind != ImportValue::Kind::kNode) walker_.fail("indexing a value that is not a node");
  return ImportValue::of_node(scoped(gm_.graph().call_function(ir::op::kGetitem, {sequence.node, index})));
}

// Which inputs become positional FX args (trailing defaults dropped) and which
// become kwargs (keyword-only ones not at their default).
struct ArgumentSplit {
  std::vector<int> positional;
  std::vector<int> keyword;
};

ArgumentSplit split_arguments(const std::vector<c10::Argument>& schema_args, const std::vector<ImportValue>& inputs,
                              const std::vector<int>& order) {
  ArgumentSplit split;
  for (int i : order) {
    if (!schema_args[i].kwarg_only()) {
      split.positional.push_back(i);
    } else if (!is_default(schema_args[i], inputs[i])) {
      split.keyword.push_back(i);
    }
  }
  while (!split.positional.empty() &&
         is_default(schema_args[split.positional.back()], inputs[split.positional.back()])) {
    split.positional.pop_back();
  }
  return split;
}

std::vector<int> all_indices(size_t n) {
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  return order;
}

ir::Node* GraphBuilder::call_node(ir::Opcode op, const std::string& target,
                                  const std::vector<c10::Argument>& schema_args, const std::vector<ImportValue>& inputs,
                                  const std::vector<int>& positional, const std::vector<int>& keyword, bool inplace) {
  std::vector<ir::Argument> args;
  for (int i : positional) args.push_back(to_argument(inputs[i], schema_args[i].real_type()));
  ir::Kwargs kwargs;
  for (int i : keyword) kwargs.emplace_back(schema_args[i].name(), to_argument(inputs[i], schema_args[i].real_type()));
  if (inplace) kwargs.emplace_back("inplace", true);
  return scoped(gm_.graph().create_node(op, target, std::move(args), std::move(kwargs)));
}

ir::Node* GraphBuilder::mapped_op(const torch::jit::Node& node, const std::vector<ImportValue>& inputs) {
  const ir::OpMapping& m = *ir::find_op_mapping(node.kind().toQualString());
  const auto& schema_args = node.schema().arguments();
  std::vector<int> order = m.order.empty() ? all_indices(inputs.size()) : m.order;
  for (size_t i = 0; i < inputs.size(); ++i) {
    bool selected = std::find(order.begin(), order.end(), static_cast<int>(i)) != order.end();
    // ATen's cudnn_enabled (batch_norm, instance_norm) is torch.backends.cudnn.enabled, no argument of F's
    if (!selected && !is_default(schema_args[i], inputs[i]) && schema_args[i].name() != "cudnn_enabled") {
      walker_.fail("cannot express argument '" + schema_args[i].name() + "' of " + node.kind().toQualString());
    }
  }
  ArgumentSplit split = split_arguments(schema_args, inputs, order);
  std::string target = m.target;
  bool fits =
      m.max_positional < 0 || (static_cast<int>(split.positional.size()) <= m.max_positional && split.keyword.empty());
  if (!fits) {
    if (*m.fallback == '\0') walker_.fail(std::string("cannot express the arguments of ") + node.kind().toQualString());
    target = m.fallback;
  }
  return call_node(m.op, target, schema_args, inputs, split.positional, split.keyword, m.inplace);
}

/// How FX records a call of a Python function of torch.nn.functional: its
/// handle_torch_function passes the leading Tensor parameters positionally
/// and the rest by keyword (`F.relu(x, True)` is recorded as
/// `relu(x, inplace=True)`); here the keywords at their default are left out.
ArgumentSplit split_as_torch_function(const std::vector<c10::Argument>& schema_args,
                                      const std::vector<ImportValue>& inputs) {
  ArgumentSplit split;
  size_t i = 0;
  for (; i < inputs.size() && schema_args[i].type()->kind() == c10::TypeKind::TensorType; ++i) {
    split.positional.push_back(static_cast<int>(i));
  }
  for (; i < inputs.size(); ++i) {
    if (!is_default(schema_args[i], inputs[i])) split.keyword.push_back(static_cast<int>(i));
  }
  return split;
}

c10::optional<ImportValue> GraphBuilder::call_function(const std::string& qualified_name,
                                                       const c10::FunctionSchema& schema,
                                                       const std::vector<ImportValue>& args) {
  // A function FX records as one node (`torch.nn.functional.relu`): one node.
  if (ir::OpRegistry::functions().find(qualified_name) == nullptr) return c10::nullopt;
  ArgumentSplit split = split_as_torch_function(schema.arguments(), args);
  return ImportValue::of_node(call_node(ir::Opcode::kCallFunction, qualified_name, schema.arguments(), args,
                                        split.positional, split.keyword, false));
}

void GraphBuilder::assertion(const ImportValue& condition, const std::string& message) {
  scoped(gm_.graph().call_function("torch._assert", {to_argument(condition), message}));
}

ImportValue GraphBuilder::custom_op(const torch::jit::Node& node, const std::vector<ImportValue>& inputs) {
  std::string kind = node.kind().toQualString();
  auto arg = [&](size_t i) { return to_argument(inputs.at(i)); };
  if (const ir::UpsampleMapping* up = ir::find_upsample_mapping(kind)) {
    // F.interpolate(input, size=..., scale_factor=..., mode=..., align_corners=...)
    ir::Kwargs kwargs = {
        {"size", arg(1)}, {"scale_factor", arg(up->has_align_corners ? 3 : 2)}, {"mode", std::string(up->mode)}};
    if (up->has_align_corners) kwargs.emplace_back("align_corners", arg(2));
    return ImportValue::of_node(scoped(
        gm_.graph().create_node(ir::Opcode::kCallFunction, "torch.nn.functional.interpolate", {arg(0)}, kwargs)));
  }
  if (kind == "aten::_convolution") {
    // _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, ...)
    if (!inputs[6].is_static()) walker_.fail("a functional convolution whose `transposed` is computed");
    std::string dims = std::to_string(inputs[3].constant.toIntList().size());
    if (inputs[6].constant.toBool()) {  // F.conv_transposeNd(input, weight, bias, stride, padding, output_padding,
                                        // groups, dilation)
      return ImportValue::of_node(
          scoped(gm_.graph().call_function("torch.nn.functional.conv_transpose" + dims + "d",
                                           {arg(0), arg(1), arg(2), arg(3), arg(4), arg(7), arg(8), arg(5)})));
    }
    return ImportValue::of_node(scoped(gm_.graph().call_function(
        "torch.nn.functional.conv" + dims + "d", {arg(0), arg(1), arg(2), arg(3), arg(4), arg(5), arg(8)})));
  }
  if (kind == "aten::index") return tensor_index(inputs);
  if (kind == "aten::fill_" || kind == "aten::copy_") return setitem(node, inputs);
  if (kind == "prim::dtype" || kind == "prim::device") return tensor_metadata(node, inputs);
  if (kind == "aten::tensor") return new_tensor(node, inputs);
  if (kind == "aten::_transformer_encoder_layer_fwd") return encoder_layer_fast_path(inputs);
  return slice_or_select(node, inputs);
}

ir::Node* GraphBuilder::attribute_node(const std::string& path, const at::Tensor& tensor) {
  auto it = attribute_nodes_.find(path);
  if (it != attribute_nodes_.end()) return it->second;
  if (!gm_.has_attr(path)) gm_.set_attr(path, tensor);
  ir::Node* node = scoped(gm_.graph().get_attr(path));
  attribute_nodes_.emplace(path, node);
  return node;
}

ir::Argument GraphBuilder::to_argument(const ImportValue& value, const c10::TypePtr& type) {
  switch (value.kind) {
    case ImportValue::Kind::kStatic: return static_argument(value.constant, type);
    case ImportValue::Kind::kNode: {
      ir::Node* node = value.node;
      for (auto it = written_.find(node); it != written_.end(); it = written_.find(node)) node = it->second;
      return node;
    }
    case ImportValue::Kind::kAttr: return attribute_node(value.path, value.tensor);
    case ImportValue::Kind::kList:
    case ImportValue::Kind::kTuple: {
      ir::Argument::Items items;
      for (const ImportValue& item : value.items) items.push_back(to_argument(item));
      return value.kind == ImportValue::Kind::kList ? ir::Argument::list(std::move(items))
                                                    : ir::Argument::tuple(std::move(items));
    }
    case ImportValue::Kind::kModule: walker_.fail("module '" + value.path + "' used as a value");
    case ImportValue::Kind::kView: walker_.fail("internal: an indexed view that is only written was read");
    case ImportValue::Kind::kOpaque: break;
  }
  walker_.fail("internal: an opaque value reached the graph");
}

ir::Argument GraphBuilder::static_argument(const c10::IValue& v, const c10::TypePtr& type) {
  if (v.isNone()) return {};
  if (v.isBool()) return v.toBool();
  if (v.isInt()) {
    if (is_enum_type(type, c10::TypeKind::ScalarTypeType)) return static_cast<c10::ScalarType>(v.toInt());
    if (is_enum_type(type, c10::TypeKind::LayoutType)) return static_cast<c10::Layout>(v.toInt());
    if (is_enum_type(type, c10::TypeKind::MemoryFormatType)) return static_cast<c10::MemoryFormat>(v.toInt());
    return v.toInt();
  }
  if (v.isDouble()) return v.toDouble();
  if (v.isString()) return v.toStringRef();
  if (v.isDevice()) return v.toDevice().str();
  if (v.isList() || v.isTuple()) {
    ir::Argument::Items items;
    auto elements = v.isList() ? v.toListRef().vec() : v.toTupleRef().elements().vec();
    for (const c10::IValue& e : elements) items.push_back(static_argument(e, nullptr));
    return v.isList() ? ir::Argument::list(std::move(items)) : ir::Argument::tuple(std::move(items));
  }
  if (v.isTensor() && is_traced_scalar(v.toTensor())) {
    // torch.jit.trace records `y * 2.0` with a 0-dim double (or long) tensor;
    // FX keeps the Python number.
    const at::Tensor& t = v.toTensor();
    if (t.scalar_type() == at::kDouble) return t.item<double>();
    if (t.scalar_type() == at::kLong) return t.item<int64_t>();
    return t.item<bool>();
  }
  if (v.isTensor()) {
    std::string path = "_tensor_constant" + std::to_string(tensor_constants_++);
    return attribute_node(path, v.toTensor());
  }
  walker_.fail(std::string("a constant of unsupported type ") + v.tagKind());
}

}  // namespace qfx::io::detail
