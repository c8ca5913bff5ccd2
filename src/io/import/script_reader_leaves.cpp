// Leaf module calls: one call_module node per call of a leaf, its inputs in
// the Python signature's order (a trace orders them by first use), and a
// traced recurrent module's flat outputs as FX's getitems.

#include "script_reader.h"

#include "leaf_modules.h"

#include "qfx/ir/module_registry.h"
#include "qfx/ir/op_names.h"
#include "qfx/nn/opaque_modules.h"

#include <algorithm>
#include <map>

namespace qfx::io::detail {

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

/// Which of an LSTMCell's (h, c) a trace that returns one tensor returns, as
/// the trace decomposes the cell: c = f * c0 + i * g (an add), h = o * tanh(c);
/// -1 when the forward is not such a trace.
int traced_cell_part(const torch::jit::Graph& forward) {
  const torch::jit::Node& last = *forward.outputs().at(0)->node();
  if (last.kind() == c10::aten::add_ || last.kind() == c10::aten::add) return 1;
  if (last.kind() != c10::aten::mul) return -1;
  for (const torch::jit::Value* input : last.inputs()) {
    if (input->node()->kind() == c10::aten::tanh) return 0;
  }
  return -1;
}

}  // namespace

ImportValue ScriptReader::recurrent_result(ir::Node* module, bool lstm, const std::vector<size_t>& order, bool single) {
  // out, (h, c) = self.lstm(x): FX's getitem, getitem_1 (the state), getitem_2, getitem_3
  auto item = [&](ir::Node* of, int64_t i) { return b_.getitem(of, i); };
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

ImportValue ScriptReader::leaf_call(const ImportValue& module, const std::string& method,
                                    std::vector<ImportValue> args) {
  const torch::jit::Method forward = module.module->get_method(method);
  const std::string& path = module.path;
  // torch.jit.trace records `identity(x)` as a call without inputs that returns
  // None (the caller reuses x): nothing to import.
  if (args.empty() && forward.graph()->outputs().at(0)->type()->kind() == c10::TypeKind::NoneType) {
    return ImportValue::of_static(c10::IValue());
  }
  if (!b_.has_module(path)) {
    std::string type = python_class_name(*module.module);
    std::shared_ptr<torch::nn::Module> built = build_leaf_module(*module.module, type, path, method);
    if (built == nullptr && type == "torch.nn.modules.activation.MultiheadAttention") {
      built = attention_leaf(*module.module, *forward.graph());
    }
    if (built == nullptr) {
      // FX keeps such a leaf as it is; no pattern matches it, so it stays float
      TORCH_WARN("import: module '", path, "' (", public_type_name(type),
                 ") has no qfx form: it runs as TorchScript and stays float");
      built = std::make_shared<nn::ScriptModuleImpl>(*module.module, public_type_name(type));
    }
    b_.add_module(path, std::move(built));
  }
  // TorchScript passes a script forward's defaults explicitly (ConvTranspose's output_size=None): FX does not
  const auto& schema = forward.function().getSchema().arguments();
  while (!args.empty() && args.size() < schema.size() && is_default(schema[args.size()], args.back())) args.pop_back();
  std::string python_class = python_class_name(*module.module);
  std::vector<size_t> outputs = traced_recurrent_outputs(*forward.graph(), python_class);
  bool lstm = python_class == "torch.nn.modules.rnn.LSTM";           // returns (output, (h, c))
  bool lstm_cell = python_class == "torch.nn.modules.rnn.LSTMCell";  // takes (h, c) too
  int cell_part = -1;  // a traced LSTMCell whose caller reads only h (0) or only c (1)
  if (lstm_cell && forward.graph()->outputs().at(0)->type()->kind() == c10::TypeKind::TensorType) {
    cell_part = traced_cell_part(*forward.graph());
    if (cell_part < 0) walker_.fail("a traced LSTMCell that returns neither its h nor its c alone");
  }
  args = python_order(*forward.graph(), python_class, std::move(args));
  if (((lstm && !outputs.empty()) || lstm_cell) && args.size() == 3) {
    args = {args[0], ImportValue::of_sequence(ImportValue::Kind::kTuple, {args[1], args[2]})};
  }
  std::vector<ir::Argument> fx_args;
  for (const ImportValue& a : args) fx_args.push_back(to_argument(a));
  ir::Node* node = b_.call_module(path, std::move(fx_args));
  if (cell_part >= 0) return ImportValue::of_node(b_.getitem(node, cell_part));
  if (outputs.empty()) return ImportValue::of_node(node);
  bool single = forward.graph()->outputs().at(0)->node()->kind() != c10::prim::TupleConstruct;
  return recurrent_result(node, lstm, outputs, single);
}

}  // namespace qfx::io::detail
