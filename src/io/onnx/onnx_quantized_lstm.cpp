// The ONNX form of torch.ao.nn.quantized.LSTM, the statically quantized
// custom module: PyTorch's quantizable LSTM forward, each cell over the
// sequence as its first step and then an ONNX Loop over the others (any
// sequence length; the first step takes the initial state in its own
// qparams, the Loop's state keeps the cell's). Each quantized kernel the
// converted cell calls becomes its float op between DequantizeLinear and
// QuantizeLinear with the kernel's output qparams:
//   igates, hgates   quantized Linear: MatMul/Gemm on the int8 weight, the Linear's qparams
//   gates            quantized add, the cell's qparams
//   sigmoid, tanh    fixed qparams: (1/256, 0) and (2/256, 128) for quint8
//   fgate_cx, igate_cgate, ogate_cy   quantized mul; fgate_cx_igate_cgate add
// Quantized cat and stack (the directions' outputs, the layers' states)
// requantize every part to the first part's qparams, as ATen's do.

#include "onnx_rules.h"

#include "qfx/nn/quantizable_lstm.h"
#include "qfx/nn/quantized.h"

#include <ATen/ATen.h>

#include <limits>

namespace qfx::io::onnx_export {
namespace {

using Kind = Value::Kind;

/// A quantized value as the input of a float op: a DequantizeLinear per use.
Value dequantized(const Value& q) {
  Value v = q;
  v.kind = Kind::kDequantized;
  return v;
}

/// One torch.ao.nn.quantized.LSTM call being exported.
class QuantizedLstm {
 public:
  QuantizedLstm(const Context& c, const nn::QuantizedLSTMImpl& m) : c_(c), m_(m), s_(m.shape()) {}

  /// (output, (h_n, c_n)), each quint8.
  Value run() const {
    Value x = quantized_arg(c_.arg(0), "input");
    if (c_.rank_of_arg(0) != 3) c_.fail("a quantized LSTM on an unbatched input has no ONNX form here");
    if (s_.batch_first) x = transposed(x, "input_t");
    std::vector<State> initial = initial_states(x);
    size_t dirs = s_.bidirectional ? 2 : 1;
    std::vector<Value> hs, cs;  // per layer: [batch, hidden], or [2, batch, hidden] when bidirectional
    for (int64_t layer = 0; layer < s_.num_layers; ++layer) {
      std::vector<Value> outputs, h, c;
      for (size_t d = 0; d < dirs; ++d) {
        size_t cell = static_cast<size_t>(layer) * dirs + d;
        auto [out, state] = single_layer(cell, x, initial[cell], d == 1);
        outputs.push_back(out);
        h.push_back(state.first);
        c.push_back(state.second);
      }
      // cat([fw, bw.flip(0)], -1): the backward outputs in fw's qparams
      x = dirs == 2 ? cat(outputs, 2, "layer_output") : outputs[0];
      hs.push_back(dirs == 2 ? cat(unsqueezed(h), 0, "layer_h") : h[0]);
      cs.push_back(dirs == 2 ? cat(unsqueezed(c), 0, "layer_c") : c[0]);
    }
    if (s_.batch_first) x = transposed(x, "output_t");
    return Value::list({x, Value::list({final_state(hs, "h_n"), final_state(cs, "c_n")})});
  }

 private:
  using State = std::pair<Value, Value>;

  std::string hint(const std::string& what) const { return c_.hint() + "_" + what; }

  /// A named quint8 ONNX value: a QuantizeLinear's output as it is, a
  /// tensor quantized at export time as an initializer with its qparams.
  Value quantized_arg(const Value& v, const std::string& what) const {
    if (v.kind == Kind::kQuantized && !v.name.empty()) return v;
    if (v.kind == Kind::kQuantized && v.constant.isTensor()) {
      const at::Tensor& q = v.constant.toTensor();
      if (q.qscheme() != c10::kPerTensorAffine) c_.fail("the LSTM's " + what + " is not quantized per tensor");
      QParams p = qparams(c_, q.q_scale(), q.q_zero_point(), what);
      return Value::quantized(c_.g().initializer(hint(what), q.int_repr()), p);
    }
    c_.fail("the quantized LSTM's " + what + " is not a quantized tensor");
  }

  QParams qparams(const Context& c, double scale, int64_t zero_point, const std::string& what) const {
    return c.g().qparams(hint(what), at::scalar_tensor(scale, at::kFloat), at::scalar_tensor(zero_point, at::kLong),
                         c10::kQUInt8, -1);
  }

  /// Float tensor `x` quantized to quint8 with (scale, zero_point).
  Value requantize(const Context& c, const std::string& x, double scale, int64_t zero_point,
                   const std::string& what) const {
    QParams q = qparams(c, scale, zero_point, what);
    return Value::quantized(c.g().quantize(x, q, hint(what)), q);
  }

  static Value same_qparams(std::string name, const Value& like) {
    return Value::quantized(std::move(name), like.qparams);
  }

  Value transposed(const Value& x, const std::string& what) const {
    return same_qparams(c_.g().op("Transpose", {x.name}, hint(what), {{"perm", std::vector<int64_t>{1, 0, 2}}}), x);
  }

  std::vector<Value> unsqueezed(const std::vector<Value>& values) const {
    std::string axes = c_.g().ints(hint("stack_axis"), {0});
    std::vector<Value> out;
    for (const Value& v : values) out.push_back(same_qparams(c_.g().op("Unsqueeze", {v.name, axes}, v.name), v));
    return out;
  }

  /// Quantized cat along `axis`: the parts after the first requantized to its qparams.
  Value cat(const std::vector<Value>& parts, int64_t axis, const std::string& what) const {
    std::vector<std::string> names;
    for (const Value& p : parts) names.push_back(c_.tensor(dequantized(p)));
    std::string joined = c_.g().op("Concat", names, hint(what + "_float"), {{"axis", axis}});
    return same_qparams(c_.g().quantize(joined, parts[0].qparams, hint(what)), parts[0]);
  }

  /// torch.stack of the layers' states (in layer 0's qparams), as
  /// [layers x directions, batch, hidden].
  Value final_state(const std::vector<Value>& layers, const std::string& what) const {
    Value stacked = layers.size() == 1 ? unsqueezed(layers)[0] : cat(unsqueezed(layers), 0, what + "_stacked");
    if (!s_.bidirectional) return stacked;
    std::string shape = c_.g().ints(hint(what + "_shape"), {2 * s_.num_layers, -1, s_.hidden_size});
    return same_qparams(c_.g().op("Reshape", {stacked.name, shape}, hint(what)), stacked);
  }

  /// Each cell's (h_0, c_0): parts of the given state, or quint8 zeros
  /// (scale 1, zero point 0) of [batch, hidden].
  std::vector<State> initial_states(const Value& x) const {
    size_t cells = m_.cells().size();
    const Value& hx = c_.arg(1);
    if (hx.kind == Kind::kNone) {
      std::string batch = c_.g().op("Gather", {shape(x), c_.g().ints(hint("batch_axis"), {1})}, hint("batch"));
      std::string size = c_.g().op("Concat", {batch, c_.g().ints(hint("hidden"), {s_.hidden_size})},
                                   hint("state_shape"), {{"axis", int64_t{0}}});
      std::string one = c_.g().initializer(hint("zero"), at::zeros({1, s_.hidden_size}, at::kByte));
      Value zeros = Value::quantized(c_.g().op("Expand", {one, size}, hint("zeros")), qparams(c_, 1.0, 0, "zeros"));
      return std::vector<State>(cells, {zeros, zeros});
    }
    if (hx.kind != Kind::kList || hx.items.size() != 2) c_.fail("the quantized LSTM's state is not a pair (h_0, c_0)");
    std::vector<Value> h = split(quantized_arg(hx.items[0], "h_0"), cells, "h_0_part");
    std::vector<Value> c = split(quantized_arg(hx.items[1], "c_0"), cells, "c_0_part");
    std::vector<State> states;
    for (size_t i = 0; i < cells; ++i) states.emplace_back(h[i], c[i]);
    return states;
  }

  std::string shape(const Value& x) const { return c_.g().op("Shape", {x.name}, x.name + "_shape"); }

  /// `x` split into `n` parts along dim 0, that dim squeezed away.
  std::vector<Value> split(const Value& x, size_t n, const std::string& what) const {
    std::vector<std::string> parts =
        c_.g().node("Split", {x.name, c_.g().ints(hint(what + "_sizes"), std::vector<int64_t>(n, 1))}, hint(what), n,
                    {{"axis", int64_t{0}}});
    std::string axes = c_.g().ints(hint(what + "_axis"), {0});
    std::vector<Value> out;
    for (const std::string& part : parts) out.push_back(same_qparams(c_.g().op("Squeeze", {part, axes}, part), x));
    return out;
  }

  /// `x[index]` along dim 0 (`index` a 0-d int64 tensor).
  static Value at_step(const Context& c, const Value& x, const std::string& index, const std::string& what) {
    return same_qparams(c.g().op("Gather", {x.name, index}, what, {{"axis", int64_t{0}}}), x);
  }

  /// _LSTMSingleLayer: cell `cell` over the sequence `x` ([time, batch,
  /// features]; from the last step back when `reverse`) from `state`; the
  /// outputs in time order and the last state. The first step runs on its
  /// own, the others in a Loop whose state keeps the cell's qparams.
  std::pair<Value, State> single_layer(size_t cell, const Value& x, const State& state, bool reverse) const {
    const nn::QuantizedLSTMCell& q = m_.cells()[cell];
    std::string at = "cell" + std::to_string(cell);
    std::string length =
        c_.g().op("Gather", {shape(x), c_.g().initializer(hint(at + "_time_axis"), at::scalar_tensor(0, at::kLong))},
                  hint(at + "_length"));
    std::string one = c_.g().initializer(hint(at + "_one"), at::scalar_tensor(1, at::kLong));
    std::string last = c_.g().op("Sub", {length, one}, hint(at + "_last"));
    std::string first_index = reverse ? last : c_.g().initializer(hint(at + "_zero"), at::scalar_tensor(0, at::kLong));
    State first = step(c_, q, at_step(c_, x, first_index, hint(at + "_x0")), state, at + "_t0");

    onnx::GraphProto body;
    OnnxGraph graph = c_.g().subgraph(body);
    ExportState body_state = c_.subgraph_state(graph);
    Context b = c_.in_graph(body_state);
    std::string i = graph.fresh(hint(at + "_i")), cond = graph.fresh(hint(at + "_cond"));
    State carried{Value::quantized(graph.fresh(hint(at + "_h")), first.first.qparams),
                  Value::quantized(graph.fresh(hint(at + "_c")), first.second.qparams)};
    // iteration i is step i + 1, or step last - 1 - i backwards
    std::string t = reverse
                        ? graph.op("Sub", {graph.op("Sub", {last, one}, hint(at + "_before_last")), i}, hint(at + "_t"))
                        : graph.op("Add", {i, one}, hint(at + "_t"));
    State next = step(b, q, at_step(b, x, t, hint(at + "_xt")), carried, at);
    body.set_name(hint(at + "_steps"));
    add_value(*body.add_input(), i, onnx::TensorProto::INT64, true);
    add_value(*body.add_input(), cond, onnx::TensorProto::BOOL, true);
    add_value(*body.add_input(), carried.first.name, onnx::TensorProto::UINT8);
    add_value(*body.add_input(), carried.second.name, onnx::TensorProto::UINT8);
    add_value(*body.add_output(), graph.op("Identity", {cond}, hint(at + "_go_on")), onnx::TensorProto::BOOL, true);
    add_value(*body.add_output(), next.first.name, onnx::TensorProto::UINT8);
    add_value(*body.add_output(), next.second.name, onnx::TensorProto::UINT8);
    add_value(*body.add_output(), graph.op("Identity", {next.first.name}, hint(at + "_out")), onnx::TensorProto::UINT8);

    std::vector<std::string> loop =
        c_.g().node("Loop", {last, "", first.first.name, first.second.name}, hint(at + "_loop"), 3, {{"body", body}});
    // the outputs in processing order: the first step's, then the Loop's
    std::string steps = c_.g().op("Concat", {unsqueezed({first.first})[0].name, loop[2]}, hint(at + "_outputs"),
                                  {{"axis", int64_t{0}}});
    if (reverse) {
      steps = c_.g().op("Slice",
                        {steps, c_.g().ints(hint(at + "_from"), {-1}),
                         c_.g().ints(hint(at + "_to"), {std::numeric_limits<int64_t>::min()}),
                         c_.g().ints(hint(at + "_axes"), {0}), c_.g().ints(hint(at + "_back"), {-1})},
                        hint(at + "_outputs_in_time_order"));
    }
    // the qparams of the first step's outputs: the same values as the body's, named in this graph
    State final{Value::quantized(loop[0], first.first.qparams), Value::quantized(loop[1], first.second.qparams)};
    return {Value::quantized(steps, first.first.qparams), final};
  }

  /// A Loop body's input or output `name` of `elem_type`; a scalar when `scalar`
  /// (ONNX Runtime asks the iteration count and condition to be declared so).
  static void add_value(onnx::ValueInfoProto& info, const std::string& name, int32_t elem_type, bool scalar = false) {
    info.set_name(name);
    auto* type = info.mutable_type()->mutable_tensor_type();
    type->set_elem_type(elem_type);
    if (scalar) type->mutable_shape();
  }

  /// A quantized Linear (torch.ao.nn.quantized.Linear) on quint8 `x`.
  Value linear_part(const Context& c, const torch::nn::Module& module, const Value& x, const std::string& what) const {
    const auto& q = dynamic_cast<const nn::QuantizedModuleImpl&>(module);
    auto [weight, bias] = nn::unpack_linear(q);
    Value y = linear(c, dequantized(x), weight, bias);
    return requantize(c, y.name, q.attribute("scale").toDouble(), q.attribute("zero_point").toInt(), what);
  }

  /// quantized::add or quantized::mul of cell part `part` (`op_type` Add or Mul).
  Value binary(const Context& c, const nn::QuantizedLSTMCell& cell, const char* op_type, size_t part, const Value& a,
               const Value& b, const std::string& what) const {
    std::string y = c.g().op(op_type, {c.tensor(dequantized(a)), c.tensor(dequantized(b))}, hint(what + "_float"));
    return requantize(c, y, cell.scales[part], cell.zero_points[part], what);
  }

  /// The quantized sigmoid or tanh kernel: fixed output qparams.
  Value activation(const Context& c, const char* op_type, const Value& x, const std::string& what) const {
    bool tanh = std::string(op_type) == "Tanh";
    std::string y = c.g().op(op_type, {c.tensor(dequantized(x))}, hint(what + "_float"));
    return requantize(c, y, tanh ? 2.0 / 256 : 1.0 / 256, tanh ? 128 : 0, what);
  }

  /// QuantizableLSTMCell.forward after convert, on step `x` and `(h, c)`.
  State step(const Context& c, const nn::QuantizedLSTMCell& cell, const Value& x, const State& hc,
             const std::string& at) const {
    Value igates = linear_part(c, *cell.igates, x, at + "_igates");
    Value hgates = linear_part(c, *cell.hgates, hc.first, at + "_hgates");
    Value gates = binary(c, cell, "Add", 0, igates, hgates, at + "_gates");
    std::vector<std::string> g = c.g().node("Split", {gates.name}, hint(at + "_gate"), 4, {{"axis", int64_t{1}}});
    auto gate = [&](size_t k) { return same_qparams(g[k], gates); };
    Value input_gate = activation(c, "Sigmoid", gate(0), at + "_input_gate");
    Value forget_gate = activation(c, "Sigmoid", gate(1), at + "_forget_gate");
    Value cell_gate = activation(c, "Tanh", gate(2), at + "_cell_gate");
    Value out_gate = activation(c, "Sigmoid", gate(3), at + "_out_gate");
    Value fgate_cx = binary(c, cell, "Mul", 1, forget_gate, hc.second, at + "_fgate_cx");
    Value igate_cgate = binary(c, cell, "Mul", 2, input_gate, cell_gate, at + "_igate_cgate");
    Value cy = binary(c, cell, "Add", 3, fgate_cx, igate_cgate, at + "_cy");
    Value tanh_cy = activation(c, "Tanh", cy, at + "_tanh_cy");
    return {binary(c, cell, "Mul", 4, out_gate, tanh_cy, at + "_hy"), cy};
  }

  const Context& c_;
  const nn::QuantizedLSTMImpl& m_;
  const nn::RecurrentShape& s_;
};

}  // namespace

Value quantized_lstm(const Context& c, const nn::QuantizedLSTMImpl& lstm) { return QuantizedLstm(c, lstm).run(); }

}  // namespace qfx::io::onnx_export
