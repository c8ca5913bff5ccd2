// Recurrent modules as TorchScript: the forward of a float or dynamic
// LSTM / GRU / RNN and of a cell, written as Python's with ATen's recurrent ops.

#include "module_script.h"

#include "qfx/nn/quantized_rnn.h"

#include <torch/nn/modules/rnn.h>

namespace qfx::io::detail {
namespace {

const torch::nn::detail::RNNOptionsBase& rnn_options(const torch::nn::Module& m) {
  if (auto* lstm = dynamic_cast<const torch::nn::LSTMImpl*>(&m)) return lstm->options_base;
  if (auto* gru = dynamic_cast<const torch::nn::GRUImpl*>(&m)) return gru->options_base;
  return dynamic_cast<const torch::nn::RNNImpl&>(m).options_base;
}

/// What a recurrent forward's source needs of the module.
struct RecurrentSource {
  bool lstm;
  int64_t num_layers, hidden_size;
  bool bias, bidirectional, batch_first;
  double dropout;
  std::string op;      ///< `lstm`, `gru`, `rnn_tanh`, `rnn_relu`, `quantized_lstm`
  std::string params;  ///< `[self.weight_ih_l0, ...]` or `self._all_weight_values`
  std::string extra;   ///< trailing keywords (`, dtype=12, use_dynamic=True`)
};

std::string recurrent_source(const RecurrentSource& r) {
  std::string zeros = "torch.zeros([" + std::to_string(r.num_layers * (r.bidirectional ? 2 : 1)) + ", input.size(" +
                      (r.batch_first ? "0" : "1") + "), " + std::to_string(r.hidden_size) + "], dtype=input.dtype)";
  std::string state_type = r.lstm ? "Optional[Tuple[Tensor, Tensor]]" : "Optional[Tensor]";
  return "def forward(self, input, hx: " + state_type + "=None):\n" + "    if hx is None:\n" +
         "        zeros = " + zeros + "\n" + "        state = " + (r.lstm ? "(zeros, zeros)" : "zeros") + "\n" +
         "    else:\n" + "        state = hx\n" + "    result = torch." + r.op + "(input, " +
         (r.lstm ? "[state[0], state[1]]" : "state") + ", " + r.params + ", " + script_literal(r.bias) + ", " +
         std::to_string(r.num_layers) + ", " + script_literal(r.dropout) + ", False, " +
         script_literal(r.bidirectional) + ", " + script_literal(r.batch_first) + r.extra + ")\n" + "    return " +
         (r.lstm ? "result[0], (result[1], result[2])" : "result") + "\n";
}

}  // namespace

/// The forward of a recurrent module (LSTM, GRU, RNN) as Python's, on a
/// batched input: zeros as the initial state unless one is given, then
/// ATen's lstm / gru / rnn_tanh / rnn_relu over the flat weights.
std::string recurrent_forward(const Emit& e, const std::string& type) {
  const torch::nn::detail::RNNOptionsBase& o = rnn_options(e.m);
  bool lstm = type == "torch.nn.LSTM";
  std::string op = lstm                                                 ? "lstm"
                   : type == "torch.nn.GRU"                             ? "gru"
                   : c10::get_if<torch::enumtype::kRNN_RELU>(&o.mode()) ? "rnn_relu"
                                                                        : "rnn_tanh";
  std::string params;
  for (const auto& item : e.m.named_parameters(/*recurse=*/false)) {
    params += (params.empty() ? "" : ", ") + e.param(item.key().c_str());
  }
  return recurrent_source({lstm, o.num_layers(), o.hidden_size(), o.bias(), o.bidirectional(), o.batch_first(),
                           o.dropout(), op, "[" + params + "]", ""});
}

namespace {

/// The forward of a cell (LSTMCell, GRUCell, RNNCell; float or dynamic) as
/// Python's on a batched input: zeros as the state unless one is given, then
/// `op(input, state, args)`.
std::string cell_source(const nn::RecurrentShape& s, const std::string& op, const std::string& args) {
  std::string zeros = "torch.zeros([input.size(0), " + std::to_string(s.hidden_size) + "], dtype=input.dtype)";
  bool lstm = s.is_lstm();
  std::string state_type = lstm ? "Optional[Tuple[Tensor, Tensor]]" : "Optional[Tensor]";
  return "def forward(self, input, hx: " + state_type + "=None):\n" + "    if hx is None:\n" +
         "        zeros = " + zeros + "\n" + "        state = " + (lstm ? "(zeros, zeros)" : "zeros") + "\n" +
         "    else:\n" + "        state = hx\n" + "    return " + op + "(input, " +
         (lstm ? "[state[0], state[1]]" : "state") + ", " + args + ")\n";
}

}  // namespace

/// A float cell's forward: ATen's lstm_cell / gru_cell / rnn_tanh_cell / rnn_relu_cell.
std::string float_cell_forward(const Emit& e) {
  nn::RecurrentShape s = nn::recurrent_shape(e.m);
  std::string kind = s.is_lstm()                          ? "lstm"
                     : s.float_type == "torch.nn.GRUCell" ? "gru"
                     : s.relu                             ? "rnn_relu"
                                                          : "rnn_tanh";
  return cell_source(
      s, "torch." + kind + "_cell",
      e.param("weight_ih") + ", " + e.param("weight_hh") + ", " + e.param("bias_ih") + ", " + e.param("bias_hh"));
}

/// `self.<path>` of a submodule of class `__torch__.torch.ao.nn.quantized.
/// dynamic.<X>` whose forward is nnqd.X's: LSTM and GRU hold their cell
/// params (`_all_weight_values`), cells their packed weights and biases.
std::string dynamic_rnn_submodule(const nn::DynamicQuantizedRNNImpl& q, const Emit& e) {
  const nn::RecurrentShape& s = q.shape();
  torch::jit::Module sub = e.attrs.new_module("torch.ao.nn.quantized.dynamic." + s.float_type.substr(9));
  mark_eval(sub);
  std::string source;
  if (s.is_cell()) {
    const std::vector<c10::IValue>& packed = q.packed_weights();
    sub.register_attribute("_packed_weight_ih", packed[0].type(), packed[0]);
    sub.register_attribute("_packed_weight_hh", packed[1].type(), packed[1]);
    sub.register_attribute("bias_ih", c10::TensorType::get(), q.bias_ih());
    sub.register_attribute("bias_hh", c10::TensorType::get(), q.bias_hh());
    source = cell_source(s, "torch.ops." + nn::dynamic_cell_op(s).replace(9, 2, "."),
                         "self._packed_weight_ih, self._packed_weight_hh, self.bias_ih, self.bias_hh");
  } else {
    sub.register_attribute("_all_weight_values", c10::ListType::create(q.cell_params().elementType()), q.cell_params());
    std::string extra =
        s.is_lstm() ? ", dtype=" + std::to_string(static_cast<int>(c10::kQInt8)) + ", use_dynamic=True" : "";
    source =
        recurrent_source({s.is_lstm(), s.num_layers, s.hidden_size, s.bias, s.bidirectional, s.batch_first, s.dropout,
                          s.is_lstm() ? "quantized_lstm" : "quantized_gru", "self._all_weight_values", extra});
  }
  define_forward(sub, source);
  return e.attrs.add(e.path, sub._ivalue());
}

bool is_recurrent_type(const std::string& type) {
  return type == "torch.nn.LSTM" || type == "torch.nn.GRU" || type == "torch.nn.RNN";
}

bool is_cell_type(const std::string& type) {
  return type == "torch.nn.LSTMCell" || type == "torch.nn.GRUCell" || type == "torch.nn.RNNCell";
}

}  // namespace qfx::io::detail
