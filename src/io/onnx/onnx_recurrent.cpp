// The ONNX forms of recurrent modules. torch.nn.LSTM, GRU and RNN (float,
// or the reference modules of dynamic quantization: the float op on the
// quantize-dequantized weights) become ONNX's LSTM, GRU and RNN ops, one per
// layer, with both directions in one op; LSTMCell, GRUCell and RNNCell
// become the same ops over a sequence of one step. PyTorch's gate chunks are
// reordered into ONNX's (LSTM i,f,g,o -> i,o,f,c; GRU r,z,n -> z,r,h), GRU
// applies its reset gate after the recurrent product as PyTorch does
// (linear_before_reset), and a batch_first or unbatched input is transposed
// or given a batch dim of one around the ops.

#include "onnx_rules.h"

#include "qfx/nn/quantized_rnn.h"

#include <ATen/ATen.h>
#include <torch/nn/modules/rnn.h>

namespace qfx::io::onnx_export {
namespace {

/// What differs between ONNX's three recurrent ops.
struct RecurrentOp {
  std::string op_type;
  std::vector<int64_t> gate_order;  ///< PyTorch's gate chunks in ONNX's order
  size_t num_states = 1;            ///< LSTM: 2, (h, c)
};

RecurrentOp op_of(const nn::RecurrentShape& s) {
  if (s.is_lstm()) return {"LSTM", {0, 3, 1, 2}, 2};
  if (s.float_type.find("GRU") != std::string::npos) return {"GRU", {1, 0, 2}, 1};
  return {"RNN", {0}, 1};
}

/// The rows of `w` (gate chunks of `hidden` rows) in `order`; a quantized
/// weight keeps its integers and qparams (per-channel ones reordered too).
at::Tensor gate_rows(const at::Tensor& w, const std::vector<int64_t>& order, int64_t hidden) {
  std::vector<at::Tensor> chunks;
  for (int64_t gate : order) chunks.push_back(at::arange(gate * hidden, (gate + 1) * hidden, at::kLong));
  at::Tensor rows = at::cat(chunks);
  if (!w.is_quantized()) return w.index_select(0, rows);
  at::Tensor ints = w.int_repr().index_select(0, rows);
  if (w.qscheme() == c10::kPerTensorAffine) {
    return at::_make_per_tensor_quantized_tensor(ints, w.q_scale(), w.q_zero_point());
  }
  TORCH_CHECK(w.qscheme() == c10::kPerChannelAffine && w.q_per_channel_axis() == 0,
              "ONNX export: a recurrent weight has an ONNX form quantized per tensor or per row, got ",
              c10::toString(w.qscheme()));
  return at::_make_per_channel_quantized_tensor(ints, w.q_per_channel_scales().index_select(0, rows),
                                                w.q_per_channel_zero_points().index_select(0, rows), 0);
}

/// The weights a recurrent module computes with: its float parameters, or a
/// reference module's quantized weights (its biases stay float).
using WeightOf = std::function<at::Tensor(const std::string&)>;

/// One recurrent module being exported.
class Recurrent {
 public:
  Recurrent(const Context& c, const torch::nn::Module& m, WeightOf weight)
      : c_(c), m_(m), s_(nn::recurrent_shape(m)), op_(op_of(s_)), weight_(std::move(weight)) {
    auto* lstm = dynamic_cast<const torch::nn::LSTMImpl*>(&m);
    if (lstm != nullptr && lstm->options.proj_size() != 0) c.fail("LSTM with proj_size has no ONNX form");
  }

  /// LSTM, GRU, RNN: (output, h_n) or (output, (h_n, c_n)).
  Value layers() const {
    bool batched = c_.rank_of_arg(0) == 3;
    std::vector<int64_t> batch_axis = {1};
    std::string x = c_.tensor(c_.arg(0));
    if (!batched) x = unsqueeze(x, batch_axis);
    if (batched && s_.batch_first) x = transpose(x);
    std::vector<std::string> initial = states(batched ? std::vector<int64_t>{} : batch_axis);
    int64_t directions = s_.bidirectional ? 2 : 1;
    std::vector<std::vector<std::string>> finals(op_.num_states);
    for (int64_t layer = 0; layer < s_.num_layers; ++layer) {
      std::vector<std::string> init;
      for (const std::string& state : initial) init.push_back(layer_rows(state, layer * directions, directions));
      std::vector<std::string> out = run(x, "_l" + std::to_string(layer), init);
      x = sequence(out[0]);
      for (size_t i = 0; i < op_.num_states; ++i) finals[i].push_back(out[1 + i]);
    }
    if (!batched) x = squeeze(x, batch_axis);
    if (batched && s_.batch_first) x = transpose(x);
    std::vector<Value> state_values;
    for (const auto& per_layer : finals) {
      std::string h = per_layer.size() == 1 ? per_layer[0] : c_.g().op("Concat", per_layer, hint("_state"), axis0());
      state_values.push_back(Value::tensor(batched ? h : squeeze(h, batch_axis)));
    }
    return Value::list({Value::tensor(x), state_value(state_values)});
  }

  /// LSTMCell: (h', c'); GRUCell, RNNCell: h'. A sequence of one step.
  Value cell() const {
    std::vector<int64_t> axes = c_.rank_of_arg(0) == 2 ? std::vector<int64_t>{0} : std::vector<int64_t>{0, 1};
    std::vector<std::string> out = run(unsqueeze(c_.tensor(c_.arg(0)), axes), "", states(axes));
    std::vector<Value> state_values;
    for (size_t i = 0; i < op_.num_states; ++i) state_values.push_back(Value::tensor(squeeze(out[1 + i], axes)));
    return state_value(state_values);
  }

  bool is_cell() const { return s_.is_cell(); }

 private:
  std::string hint(const std::string& suffix) const { return c_.hint() + suffix; }
  static std::vector<Attr> axis0() { return {{"axis", int64_t{0}}}; }

  std::string unsqueeze(const std::string& x, const std::vector<int64_t>& axes) const {
    return c_.g().op("Unsqueeze", {x, c_.g().ints(hint("_axes"), axes)}, hint("_unsqueezed"));
  }
  std::string squeeze(const std::string& x, const std::vector<int64_t>& axes) const {
    return c_.g().op("Squeeze", {x, c_.g().ints(hint("_axes"), axes)}, hint("_squeezed"));
  }
  /// Swaps the sequence and batch dims of a 3-d tensor.
  std::string transpose(const std::string& x) const {
    return c_.g().op("Transpose", {x}, hint("_transposed"), {{"perm", std::vector<int64_t>{1, 0, 2}}});
  }

  /// The initial states given (argument 1: h, or (h, c) for LSTMs), each
  /// unsqueezed at `axes`; none when the argument is absent (ONNX's zeros).
  std::vector<std::string> states(const std::vector<int64_t>& axes) const {
    const Value& hx = c_.arg(1, "hx");
    if (hx.kind == Value::Kind::kNone) return {};
    std::vector<Value> items = op_.num_states == 1 ? std::vector<Value>{hx} : hx.items;
    if (items.size() != op_.num_states) c_.fail("the initial LSTM state is not a pair (h, c) of tensors");
    std::vector<std::string> out;
    for (const Value& item : items) out.push_back(axes.empty() ? c_.tensor(item) : unsqueeze(c_.tensor(item), axes));
    return out;
  }

  /// Rows [first, first + count) of a [layers x directions, batch, hidden] state.
  std::string layer_rows(const std::string& state, int64_t first, int64_t count) const {
    if (s_.num_layers == 1) return state;
    auto& g = c_.g();
    return g.op(
        "Slice",
        {state, g.ints(hint("_starts"), {first}), g.ints(hint("_ends"), {first + count}), g.ints(hint("_axes"), {0})},
        hint("_initial"));
  }

  /// ONNX's Y [seq, directions, batch, hidden] as PyTorch's [seq, batch, directions x hidden].
  std::string sequence(const std::string& y) const {
    if (!s_.bidirectional) return squeeze(y, {1});
    std::string t = c_.g().op("Transpose", {y}, hint("_y"), {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
    return c_.g().op("Reshape", {t, c_.g().ints(hint("_shape"), {0, 0, -1})}, hint("_output"));
  }

  Value state_value(const std::vector<Value>& states) const {
    return states.size() == 1 ? states[0] : Value::list(states);
  }

  /// The op over sequence `x` [seq, batch, features] for the parameters
  /// ending in `suffix` (`_l0`; "" for a cell): its outputs Y, Y_h (, Y_c).
  std::vector<std::string> run(const std::string& x, const std::string& suffix,
                               const std::vector<std::string>& init) const {
    std::vector<std::string> inputs = {x, weights("weight_ih" + suffix), weights("weight_hh" + suffix), biases(suffix),
                                       ""};
    for (const std::string& state : init) inputs.push_back(state);
    while (inputs.back().empty()) inputs.pop_back();
    std::vector<Attr> attrs = {{"hidden_size", s_.hidden_size},
                               {"direction", std::string(s_.bidirectional ? "bidirectional" : "forward")}};
    if (op_.op_type == "GRU") attrs.push_back({"linear_before_reset", int64_t{1}});
    if (op_.op_type == "RNN") {
      attrs.push_back({"activations", std::vector<std::string>(s_.bidirectional ? 2 : 1, s_.relu ? "Relu" : "Tanh")});
    }
    return c_.g().node(op_.op_type, inputs, hint(suffix), 1 + op_.num_states, attrs);
  }

  std::vector<std::string> direction_names(const std::string& name) const {
    if (!s_.bidirectional) return {name};
    return {name, name + "_reverse"};
  }

  /// W or R [directions, gates x hidden, features]: an initializer for float
  /// weights, per direction dequantized and stacked for quantized ones.
  std::string weights(const std::string& name) const {
    std::vector<at::Tensor> per_direction;
    for (const std::string& n : direction_names(name)) {
      per_direction.push_back(gate_rows(weight_(n), op_.gate_order, s_.hidden_size));
    }
    if (!per_direction[0].is_quantized()) return weight_input(c_, at::stack(per_direction), false, hint("_" + name));
    std::vector<std::string> parts;
    for (size_t d = 0; d < per_direction.size(); ++d) {
      parts.push_back(unsqueeze(weight_input(c_, per_direction[d], false, hint("_" + name)), {0}));
    }
    return parts.size() == 1 ? parts[0] : c_.g().op("Concat", parts, hint("_" + name), axis0());
  }

  /// B [directions, 2 x gates x hidden]: input and recurrent biases; "" without.
  std::string biases(const std::string& suffix) const {
    if (!s_.bias) return "";
    auto params = m_.named_parameters(/*recurse=*/false);
    std::vector<at::Tensor> per_direction;
    for (const std::string& n : direction_names(suffix)) {
      per_direction.push_back(at::cat({gate_rows(params["bias_ih" + n], op_.gate_order, s_.hidden_size),
                                       gate_rows(params["bias_hh" + n], op_.gate_order, s_.hidden_size)}));
    }
    return c_.constant(hint("_bias" + suffix), at::stack(per_direction).to(at::kFloat));
  }

  const Context& c_;
  const torch::nn::Module& m_;
  nn::RecurrentShape s_;
  RecurrentOp op_;
  WeightOf weight_;
};

}  // namespace

Value recurrent(const Context& c, const torch::nn::Module& float_module, const nn::ReferenceRNNImpl* reference) {
  WeightOf weight = [&float_module](const std::string& name) {
    return float_module.named_parameters(/*recurse=*/false)[name];
  };
  if (reference != nullptr) weight = [reference](const std::string& name) { return reference->quantized_weight(name); };
  Recurrent r(c, float_module, weight);
  return r.is_cell() ? r.cell() : r.layers();
}

}  // namespace qfx::io::onnx_export
