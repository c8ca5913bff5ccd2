// GraphBuilder: turns walked TorchScript calls into FX nodes.
//
//   prim::CallMethod on a leaf module  -> call_module[target=path]
//   prim::CallMethod on another module -> its method graph, walked inline
//   aten op                            -> op table row (or a custom row)
//   tensor attribute / constant        -> get_attr, created at first use

#include "graph_builder.h"
#include "qfx/ir/op_names.h"

#include "leaf_modules.h"
#include "op_table.h"

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

bool is_default(const c10::Argument& schema_arg, const ImportValue& value) {
  return value.is_static() && schema_arg.default_value() && static_equals(value.constant, *schema_arg.default_value());
}

bool is_enum_type(const c10::TypePtr& type, c10::TypeKind kind) {
  if (type == nullptr) return false;
  if (auto optional = type->cast<c10::OptionalType>()) return is_enum_type(optional->getElementType(), kind);
  return type->kind() == kind;
}

ir::Argument full_slice() { return ir::Argument::slice({}, {}, {}); }

bool is_traced_scalar(const at::Tensor& t) {
  return t.dim() == 0 && !t.requires_grad() &&
         (t.scalar_type() == at::kDouble || t.scalar_type() == at::kLong || t.scalar_type() == at::kBool);
}

}  // namespace

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

/// Leaves whose traced forward may take its inputs in another order than the
/// Python signature (torch.jit.trace orders them by first use): the ATen op
/// that reads them, and its input positions in the Python signature's order.
struct LeafSignature {
  const char* python_class;
  const char* op;
  std::vector<size_t> op_inputs;
};

const std::vector<LeafSignature>& leaf_signatures() {
  // EmbeddingBag.forward(input, offsets, per_sample_weights): embedding_bag(weight, indices, offsets, ...,
  // per_sample_weights, ...); a trace takes (input, per_sample_weights, offsets)
  static const std::vector<LeafSignature> kRows = {
      {"torch.nn.modules.sparse.EmbeddingBag", "aten::embedding_bag", {1, 2, 6}},
  };
  return kRows;
}

/// Which input of `graph` after `self` `value` is (-1: none).
int forward_input(const torch::jit::Graph& graph, const torch::jit::Value* value) {
  for (size_t i = 1; i < graph.inputs().size(); ++i) {
    if (graph.inputs()[i] == value) return static_cast<int>(i) - 1;
  }
  return -1;
}

/// A traced cell runs its op decomposed: `linear(input, weight_ih)`,
/// `linear(h, weight_hh)`, then c for an LSTMCell. The forward's inputs in
/// the order (input, h[, c]); `args` unchanged when that cannot be read.
std::vector<ImportValue> traced_cell_order(const torch::jit::Graph& graph, std::vector<ImportValue> args) {
  std::vector<int> order;
  for (const char* weight : {"weight_ih", "weight_hh"}) {
    for (const torch::jit::Node* n : graph.nodes()) {
      if (n->kind() != c10::aten::linear) continue;
      const torch::jit::Node* w = n->input(1)->node();
      if (w->kind() != c10::prim::GetAttr || w->s(c10::attr::name) != weight) continue;
      order.push_back(forward_input(graph, n->input(0)));
      break;
    }
  }
  if (order.size() != 2 || order[0] < 0 || order[1] < 0) return args;
  for (int i = 0; i < static_cast<int>(args.size()); ++i) {
    if (i != order[0] && i != order[1]) order.push_back(i);
  }
  std::vector<ImportValue> ordered;
  for (int i : order) ordered.push_back(args.at(static_cast<size_t>(i)));
  return ordered;
}

bool is_cell_class(const std::string& python_class) {
  return python_class == "torch.nn.modules.rnn.LSTMCell" || python_class == "torch.nn.modules.rnn.GRUCell" ||
         python_class == "torch.nn.modules.rnn.RNNCell";
}

/// The aten op a traced recurrent module's forward ends in.
const std::map<std::string, std::string>& recurrent_ops() {
  static const std::map<std::string, std::string> ops = {
      {"torch.nn.modules.rnn.LSTM", "aten::lstm"},
      {"torch.nn.modules.rnn.GRU", "aten::gru"},
      {"torch.nn.modules.rnn.RNN", "aten::rnn_tanh"},
  };
  return ops;
}

/// True when `node` runs `op` (an RNN's aten::rnn_tanh stands for rnn_relu too).
bool runs_recurrent_op(const torch::jit::Node& node, const std::string& op) {
  std::string kind = node.kind().toQualString();
  return kind == op || (op == "aten::rnn_tanh" && kind == "aten::rnn_relu");
}

/// The aten op node of a traced recurrent module's forward (null if none).
const torch::jit::Node* recurrent_op_node(const torch::jit::Graph& graph, const std::string& python_class) {
  auto op = recurrent_ops().find(python_class);
  if (op == recurrent_ops().end()) return nullptr;
  for (const torch::jit::Node* n : graph.nodes()) {
    if (runs_recurrent_op(*n, op->second)) return n;
  }
  return nullptr;
}

/// A traced LSTM / GRU / RNN reads its inputs in `op(input, hx, ...)`, where
/// an LSTM's hx is the list [h, c]; the tracer orders the forward's inputs by
/// first use (a state held in buffers comes first). The forward's inputs in
/// the order (input, h[, c]); `args` unchanged when that cannot be read.
std::vector<ImportValue> traced_recurrent_order(const torch::jit::Graph& graph, const std::string& python_class,
                                                std::vector<ImportValue> args) {
  const torch::jit::Node* op = recurrent_op_node(graph, python_class);
  if (op == nullptr || op->inputs().size() < 2) return args;
  std::vector<const torch::jit::Value*> wanted{op->input(0)};
  const torch::jit::Value* hx = op->input(1);
  if (hx->node()->kind() == c10::prim::ListConstruct) {
    wanted.insert(wanted.end(), hx->node()->inputs().begin(), hx->node()->inputs().end());
  } else {
    wanted.push_back(hx);
  }
  std::vector<ImportValue> ordered;
  for (const torch::jit::Value* v : wanted) {
    int i = forward_input(graph, v);
    if (i >= 0 && static_cast<size_t>(i) < args.size()) ordered.push_back(args[static_cast<size_t>(i)]);
  }
  return ordered.size() == args.size() ? ordered : args;
}

/// `args` of a call of a leaf's `forward`, in its Python signature's order.
std::vector<ImportValue> python_order(const torch::jit::Graph& graph, const std::string& python_class,
                                      std::vector<ImportValue> args) {
  if (is_cell_class(python_class) && args.size() > 1) return traced_cell_order(graph, std::move(args));
  if (recurrent_ops().count(python_class) != 0 && args.size() > 1) {
    return traced_recurrent_order(graph, python_class, std::move(args));
  }
  auto row = std::find_if(leaf_signatures().begin(), leaf_signatures().end(),
                          [&](const LeafSignature& r) { return python_class == r.python_class; });
  if (row == leaf_signatures().end()) return args;
  auto nodes = graph.nodes();
  auto op = std::find_if(nodes.begin(), nodes.end(),
                         [&](const torch::jit::Node* n) { return n->kind().toQualString() == std::string(row->op); });
  if (op == nodes.end()) return args;  // a scripted forward: inputs in signature order
  std::vector<ImportValue> ordered;
  for (size_t position : row->op_inputs) {
    int i = position < op->inputs().size() ? forward_input(graph, op->input(position)) : -1;
    if (i >= 0 && static_cast<size_t>(i) < args.size()) ordered.push_back(args[static_cast<size_t>(i)]);
  }
  return ordered.size() == args.size() ? ordered : args;
}

/// A traced recurrent module's forward returns only the outputs its caller
/// uses, flat and in an order of the tracer's: LSTM's (output, (h_n, c_n))
/// may come back as (h, c, output), or as `output` alone. Which of the aten
/// op's outputs (0 output, 1 h_n, 2 c_n) each returned value is; empty when
/// the forward is not such a trace.
std::vector<size_t> traced_recurrent_outputs(const torch::jit::Graph& forward, const std::string& python_class) {
  auto op = recurrent_ops().find(python_class);
  if (op == recurrent_ops().end()) return {};
  const torch::jit::Value* result = forward.outputs().at(0);
  std::vector<const torch::jit::Value*> returned = {result};
  if (result->node()->kind() == c10::prim::TupleConstruct) {
    returned.assign(result->node()->inputs().begin(), result->node()->inputs().end());
  }
  std::vector<size_t> order;
  for (const torch::jit::Value* v : returned) {
    if (!runs_recurrent_op(*v->node(), op->second)) return {};
    order.push_back(v->offset());
  }
  return order;
}

}  // namespace

ImportValue GraphBuilder::recurrent_result(ir::Node* module, bool lstm, const std::vector<size_t>& order, bool single) {
  // out, (h, c) = self.lstm(x): FX's getitem, getitem_1 (the state), getitem_2, getitem_3
  auto item = [&](ir::Node* of, int64_t i) { return scoped(gm_.graph().call_function(ir::op::kGetitem, {of, i})); };
  std::map<size_t, ir::Node*> values;
  ir::Node* state = nullptr;
  auto value = [&](size_t k) {
    if (values.count(k) != 0) return values[k];
    if (k == 0 || !lstm) return values[k] = item(module, static_cast<int64_t>(k));
    if (state == nullptr) state = item(module, 1);
    return values[k] = item(state, static_cast<int64_t>(k) - 1);
  };
  std::vector<ImportValue> flat;
  for (size_t k : order) flat.push_back(ImportValue::of_node(value(k)));
  if (single) return flat.at(0);
  return ImportValue::of_sequence(ImportValue::Kind::kTuple, std::move(flat));
}

ImportValue GraphBuilder::leaf_call(const ImportValue& module, const std::string& method,
                                    std::vector<ImportValue> args) {
  const torch::jit::Method forward = module.module->get_method(method);
  const std::string& path = module.path;
  // torch.jit.trace records `identity(x)` as a call without inputs that returns
  // None (the caller reuses x): nothing to import.
  if (args.empty() && forward.graph()->outputs().at(0)->type()->kind() == c10::TypeKind::NoneType) {
    return ImportValue::of_static(c10::IValue());
  }
  if (built_leaves_.count(path) == 0) {
    std::string type = python_class_name(*module.module);
    std::shared_ptr<torch::nn::Module> built = build_leaf_module(*module.module, type, path, method);
    if (built == nullptr) {
      // FX keeps such a leaf as it is; no pattern matches it, so it stays float
      TORCH_WARN("import: module '", path, "' (", public_type_name(type),
                 ") has no qfx form: it runs as TorchScript and stays float");
      built = std::make_shared<nn::ScriptModuleImpl>(*module.module, public_type_name(type));
    }
    gm_.add_submodule(path, std::move(built));
    built_leaves_.insert(path);
  }
  // TorchScript passes a script forward's defaults explicitly (ConvTranspose's output_size=None): FX does not
  const auto& schema = forward.function().getSchema().arguments();
  while (!args.empty() && args.size() < schema.size() && is_default(schema[args.size()], args.back())) args.pop_back();
  std::string python_class = python_class_name(*module.module);
  std::vector<size_t> outputs = traced_recurrent_outputs(*forward.graph(), python_class);
  bool lstm = python_class == "torch.nn.modules.rnn.LSTM";           // returns (output, (h, c))
  bool lstm_cell = python_class == "torch.nn.modules.rnn.LSTMCell";  // takes (h, c) too
  if (lstm_cell && forward.graph()->outputs().at(0)->type()->kind() == c10::TypeKind::TensorType) {
    walker_.fail(
        "a traced LSTMCell whose caller reads only one of (h, c): the trace does not record which; "
        "trace the model with both read, or script it");
  }
  args = python_order(*forward.graph(), python_class, std::move(args));
  if (((lstm && !outputs.empty()) || lstm_cell) && args.size() == 3) {
    args = {args[0], ImportValue::of_sequence(ImportValue::Kind::kTuple, {args[1], args[2]})};
  }
  std::vector<ir::Argument> fx_args;
  for (const ImportValue& a : args) fx_args.push_back(to_argument(a));
  // QuantizationTracer records a leaf's own call under the leaf's scope.
  ir::Node* node = gm_.graph().call_module(path, std::move(fx_args));
  node->meta()[ir::kScopeMeta] = ir::NodeScope{path, nn::python_class_of(*gm_.get_submodule(path))};
  if (outputs.empty()) return ImportValue::of_node(node);
  bool single = forward.graph()->outputs().at(0)->node()->kind() != c10::prim::TupleConstruct;
  return recurrent_result(node, lstm, outputs, single);
}

std::vector<ImportValue> GraphBuilder::call_op(const torch::jit::Node& node, std::vector<ImportValue> inputs) {
  std::string kind = node.kind().toQualString();
  ImportValue result;
  if (has_custom_mapping(kind)) {
    result = custom_op(node, inputs);
  } else if (find_op_mapping(kind) != nullptr) {
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
  const OpMapping& m = *find_op_mapping(node.kind().toQualString());
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
  auto static_int = [&](size_t i) -> int64_t {
    if (!inputs.at(i).is_static() || !inputs[i].constant.isInt()) walker_.fail(kind + ": non-constant dimension");
    return inputs[i].constant.toInt();
  };
  if (const UpsampleMapping* up = find_upsample_mapping(kind)) {
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
  // aten::slice(self, dim, start, end, step) / aten::select(self, dim, index) => x[..., index]
  int64_t dim = static_int(1);
  if (dim < 0) walker_.fail(kind + " with a negative dimension");
  ir::Argument index;
  if (kind == "aten::select") {
    index = arg(2);
  } else {
    auto bound = [&](size_t i, int64_t trivial) -> ir::Argument {
      const ImportValue& v = inputs.at(i);
      if (v.is_static() && (v.constant.isNone() || (v.constant.isInt() && v.constant.toInt() == trivial))) return {};
      return arg(i);
    };
    index = ir::Argument::slice(bound(2, 0), bound(3, std::numeric_limits<int64_t>::max()), bound(4, 1));
    // x[:, :] is traced as slices over the whole range, which FX never records.
    if (index == full_slice()) return inputs[0];
  }
  ir::Argument::Items parts(static_cast<size_t>(dim), full_slice());
  parts.push_back(index);
  if (written_through(*node.output())) return view_of(inputs[0], parts);
  ir::Argument key = parts.size() == 1 ? parts[0] : ir::Argument::tuple(parts);
  return ImportValue::of_node(scoped(gm_.graph().call_function(ir::op::kGetitem, {arg(0), key})));
}

namespace {

bool is_view_op(const torch::jit::Node& node) {
  return node.kind() == c10::aten::slice || node.kind() == c10::aten::select;
}

/// `x[a][b]` as one index `x[c]` when every part of `a` is a slice (the
/// dimensions line up); false when the two cannot be merged.
bool merge_index(ir::Argument::Items& outer, const ir::Argument::Items& inner) {
  for (const ir::Argument& part : outer) {
    if (part.kind() != ir::Argument::Kind::kSlice) return false;
  }
  for (size_t k = 0; k < inner.size(); ++k) {
    if (k >= outer.size()) {
      outer.push_back(inner[k]);
    } else if (outer[k] == full_slice()) {
      outer[k] = inner[k];
    } else if (inner[k] != full_slice()) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool GraphBuilder::written_through(const torch::jit::Value& view) {
  if (view.uses().size() != 1 || view.uses()[0].offset != 0) return false;
  const torch::jit::Node& user = *view.uses()[0].user;
  if (user.kind() == c10::aten::fill_ || user.kind() == c10::aten::copy_) return true;
  return is_view_op(user) && written_through(*user.output());
}

ImportValue GraphBuilder::view_of(const ImportValue& value, ir::Argument::Items index) {
  if (value.kind != ImportValue::Kind::kView) return ImportValue::of_view(value, std::move(index));
  ir::Argument::Items merged = value.index;
  if (!merge_index(merged, index)) walker_.fail("an assignment through an index qfx cannot merge into one");
  return ImportValue::of_view(value.items.at(0), std::move(merged));
}

ImportValue GraphBuilder::tensor_index(const std::vector<ImportValue>& inputs) {
  // aten::index(self, [i, None, j]) => x[i, :, j]; x[i] for one index
  const ImportValue& list = inputs.at(1);
  if (list.kind != ImportValue::Kind::kList) walker_.fail("aten::index with indices that are not a list");
  ir::Argument base = to_argument(inputs[0]);  // first, as Python evaluates `x[i]`
  ir::Argument::Items parts;
  for (const ImportValue& item : list.items) {
    parts.push_back(item.is_static() && item.constant.isNone() ? full_slice() : to_argument(item));
  }
  ir::Argument index = parts.size() == 1 ? parts[0] : ir::Argument::tuple(parts);
  return ImportValue::of_node(scoped(gm_.graph().call_function(ir::op::kGetitem, {base, index})));
}

ImportValue GraphBuilder::setitem(const torch::jit::Node& node, const std::vector<ImportValue>& inputs) {
  // x[a:b, c:d] = v is traced as slices of x, then fill_ (or copy_) on the view: FX's operator.setitem
  std::string kind = node.kind().toQualString();
  const ImportValue& view = inputs.at(0);
  if (view.kind != ImportValue::Kind::kView || node.output()->hasUses()) {
    walker_.fail(kind + " other than `x[index] = value` (an in-place write qfx cannot express)");
  }
  ir::Node* base = to_argument(view.items.at(0)).to_node();
  const ir::Argument::Items& index = view.index;
  ir::Argument key = index.size() == 1 ? index[0] : ir::Argument::tuple(index);
  written_[base] = scoped(gm_.graph().call_function("operator.setitem", {base, key, to_argument(inputs.at(1))}));
  return ImportValue::opaque();
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
