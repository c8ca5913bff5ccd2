// ScriptReader: turns walked TorchScript calls into FX nodes.
//
//   prim::CallMethod on a leaf module  -> call_module[target=path]
//   prim::CallMethod on another module -> its method graph, walked inline
//   aten op                            -> op table row (or a custom row)
//   tensor attribute / constant        -> get_attr, created at first use

#include "script_reader.h"
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

bool is_traced_scalar(const at::Tensor& t) {
  return t.dim() == 0 && !t.requires_grad() &&
         (t.scalar_type() == at::kDouble || t.scalar_type() == at::kLong || t.scalar_type() == at::kBool);
}

}  // namespace

std::string python_class_name(const torch::jit::Module& module) {
  return python_qualified_name(module.type()->name()->qualifiedName());
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

/// True when a graph branches or loops (a scripted forward; a trace never does).
bool has_control_flow(const torch::jit::Graph& graph) {
  for (const torch::jit::Node* node : graph.nodes()) {
    if (node->kind() == c10::prim::If || node->kind() == c10::prim::Loop) return true;
  }
  return false;
}

void ScriptReader::import_forward(const torch::jit::Module& root) {
  auto method = root.get_method("forward");
  const torch::jit::Graph& graph = *method.graph();
  std::vector<ImportValue> inputs{ImportValue::of_module("", root)};
  for (size_t i = 1; i < graph.inputs().size(); ++i) {
    std::string name = graph.inputs()[i]->debugName();
    name = name.substr(0, name.find('.'));  // "x.1" -> "x"
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) name = "input";
    inputs.push_back(ImportValue::of_node(b_.placeholder(name, graph.inputs()[i]->type()->annotation_str())));
  }
  auto outputs = walker_.run(graph, std::move(inputs));
  b_.output(to_argument(outputs.at(0)));
}

ImportValue ScriptReader::call_module(const ImportValue& module, const std::string& method,
                                      std::vector<ImportValue> args) {
  std::string type = python_class_name(*module.module);
  // prepare_fx swaps FloatFunctional for FXFloatFunctional, whose add, mul,
  // cat, ... are the bare ops: no call of its activation_post_process
  if (b_.scope().module_type == kFloatFunctional && type == "torch.nn.modules.linear.Identity") {
    return args.at(0);
  }
  // FX calls a leaf module's forward (a trace's second call of a module is
  // `forward1`); any other method, FloatFunctional's add included, it traces through.
  if (is_forward(method) && (is_leaf_module(type) || b_.has_module(module.path))) {
    return leaf_call(module, method, std::move(args));
  }
  // A scripted transformer container branches on its input (the fast-path checks): kept whole, float,
  // as qfx's nn::TransformerEncoder(Layer) where it has that form, else as the TorchScript it is
  if (is_forward(method) && traced_through(type) && has_control_flow(*module.module->get_method(method).graph())) {
    std::shared_ptr<torch::nn::Module> leaf = scripted_encoder_leaf(*module.module, type);
    TORCH_WARN("import: module '", module.path, "' (", public_type_name(type), ") is scripted with control flow: ",
               leaf != nullptr ? "it stays whole and float" : "it runs as TorchScript and stays float",
               " (trace the model to quantize its layers)");
    if (leaf == nullptr) leaf = std::make_shared<nn::ScriptModuleImpl>(*module.module, public_type_name(type));
    b_.add_module(module.path, std::move(leaf));
    return leaf_call(module, method, std::move(args));
  }
  if (auto whole = kept_whole(module, type)) {
    b_.add_module(module.path, std::move(whole));
    return leaf_call(module, method, std::move(args));
  }
  std::vector<ImportValue> inputs{module};
  for (auto& a : args) inputs.push_back(std::move(a));
  b_.enter_scope(module.path, public_type_name(type));
  auto outputs = walker_.run(*module.module->get_method(method).graph(), std::move(inputs));
  b_.exit_scope();
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

std::shared_ptr<torch::nn::Module> ScriptReader::kept_whole(const ImportValue& module,
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
         aten_name == "aten::_transformer_encoder_layer_fwd" || ir::find_upsample_mapping(aten_name) != nullptr;
}

}  // namespace

std::vector<ImportValue> ScriptReader::call_op(const torch::jit::Node& node, std::vector<ImportValue> inputs) {
  std::string kind = node.kind().toQualString();
  ImportValue result;
  if (has_custom_mapping(kind)) {
    result = custom_op(node, inputs);
  } else if (ir::find_op_mapping(kind) != nullptr) {
    result = ImportValue::of_node(b_.call_mapped(kind, node.schema().arguments(), op_inputs(inputs)));
  } else {
    walker_.fail("unsupported op " + kind);
  }
  if (node.outputs().size() == 1) return {result};
  std::vector<ImportValue> outputs;
  for (size_t i = 0; i < node.outputs().size(); ++i) outputs.push_back(element(result, static_cast<int64_t>(i)));
  return outputs;
}

ImportValue ScriptReader::element(const ImportValue& sequence, int64_t index) {
  if (sequence.kind != ImportValue::Kind::kNode) walker_.fail("indexing a value that is not a node");
  return ImportValue::of_node(b_.getitem(sequence.node, index));
}

c10::optional<ImportValue> ScriptReader::call_function(const std::string& qualified_name,
                                                       const c10::FunctionSchema& schema,
                                                       const std::vector<ImportValue>& args) {
  // A function FX records as one node (`torch.nn.functional.relu`): one node.
  if (ir::OpRegistry::functions().find(qualified_name) == nullptr) return c10::nullopt;
  return ImportValue::of_node(b_.call_torch_function(qualified_name, schema.arguments(), op_inputs(args)));
}

void ScriptReader::assertion(const ImportValue& condition, const std::string& message) {
  b_.call(ir::Opcode::kCallFunction, "torch._assert", {to_argument(condition), message});
}

ImportValue ScriptReader::custom_op(const torch::jit::Node& node, const std::vector<ImportValue>& inputs) {
  std::string kind = node.kind().toQualString();
  auto arg = [&](size_t i) { return to_argument(inputs.at(i)); };
  if (const ir::UpsampleMapping* up = ir::find_upsample_mapping(kind)) {
    // F.interpolate(input, size=..., scale_factor=..., mode=..., align_corners=...)
    ir::Kwargs kwargs = {
        {"size", arg(1)}, {"scale_factor", arg(up->has_align_corners ? 3 : 2)}, {"mode", std::string(up->mode)}};
    if (up->has_align_corners) kwargs.emplace_back("align_corners", arg(2));
    return ImportValue::of_node(
        b_.call(ir::Opcode::kCallFunction, "torch.nn.functional.interpolate", {arg(0)}, kwargs));
  }
  if (kind == "aten::_convolution") {
    // _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, ...)
    if (!inputs[6].is_static()) walker_.fail("a functional convolution whose `transposed` is computed");
    std::string dims = std::to_string(inputs[3].constant.toIntList().size());
    if (inputs[6].constant.toBool()) {  // F.conv_transposeNd(input, weight, bias, stride, padding, output_padding,
                                        // groups, dilation)
      return ImportValue::of_node(b_.call(ir::Opcode::kCallFunction, "torch.nn.functional.conv_transpose" + dims + "d",
                                          {arg(0), arg(1), arg(2), arg(3), arg(4), arg(7), arg(8), arg(5)}));
    }
    return ImportValue::of_node(b_.call(ir::Opcode::kCallFunction, "torch.nn.functional.conv" + dims + "d",
                                        {arg(0), arg(1), arg(2), arg(3), arg(4), arg(5), arg(8)}));
  }
  if (kind == "aten::index") return tensor_index(inputs);
  if (kind == "aten::fill_" || kind == "aten::copy_") return setitem(node, inputs);
  if (kind == "prim::dtype" || kind == "prim::device") return tensor_metadata(node, inputs);
  if (kind == "aten::tensor") return new_tensor(node, inputs);
  if (kind == "aten::_transformer_encoder_layer_fwd") return encoder_layer_fast_path(inputs);
  return slice_or_select(node, inputs);
}

std::vector<OpInput> ScriptReader::op_inputs(const std::vector<ImportValue>& values) {
  std::vector<OpInput> inputs;
  for (const ImportValue& v : values) {
    OpInput in{c10::nullopt, [this, &v](const c10::TypePtr& type) { return to_argument(v, type); }};
    if (v.is_static()) in.constant = v.constant;
    inputs.push_back(std::move(in));
  }
  return inputs;
}

ir::Argument ScriptReader::to_argument(const ImportValue& value, const c10::TypePtr& type) {
  switch (value.kind) {
    case ImportValue::Kind::kStatic: return static_argument(value.constant, type);
    case ImportValue::Kind::kNode: {
      ir::Node* node = value.node;
      for (auto it = written_.find(node); it != written_.end(); it = written_.find(node)) node = it->second;
      return node;
    }
    case ImportValue::Kind::kAttr: return b_.get_attr(value.path, value.tensor);
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

ir::Argument ScriptReader::static_argument(const c10::IValue& v, const c10::TypePtr& type) {
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
  return b_.constant(v, type);
}

}  // namespace qfx::io::detail
