// The TorchScript form of torch.ao.nn.quantized.LSTM: a submodule whose
// methods are PyTorch's quantizable LSTM forward with the layers and
// directions unrolled, one method per cell and one per (layer, direction)
// sequence.

#include "module_script.h"

#include "qfx/nn/quantizable_lstm.h"

namespace qfx::io::detail {
namespace {

/// `torch.ops.quantized.<op>(a, b, scale, zero_point)` of cell part `part`.
std::string qop(const nn::QuantizedLSTMCell& cell, const char* op, size_t part, const std::string& a,
                const std::string& b) {
  return std::string("torch.ops.quantized.") + op + "(" + a + ", " + b + ", " + script_literal(cell.scales[part]) +
         ", " + std::to_string(cell.zero_points[part]) + ")";
}

/// `cell_<i>(x, h, c)`: QuantizableLSTMCell.forward after convert.
std::string cell_method(const nn::QuantizedLSTMCell& cell, size_t i, ScriptAttrs& attrs) {
  std::string path = "cell_" + std::to_string(i);
  std::string igates = module_expression(*cell.igates, path + ".igates", {"x"}, attrs);
  std::string hgates = module_expression(*cell.hgates, path + ".hgates", {"h"}, attrs);
  return "def " + path + "(self, x: Tensor, h: Tensor, c: Tensor) -> Tuple[Tensor, Tensor]:\n" +
         "    gates = " + qop(cell, "add", 0, igates, hgates) + ".chunk(4, 1)\n" +
         "    fgate_cx = " + qop(cell, "mul", 1, "torch.sigmoid(gates[1])", "c") + "\n" +
         "    igate_cgate = " + qop(cell, "mul", 2, "torch.sigmoid(gates[0])", "torch.tanh(gates[2])") + "\n" +
         "    cy = " + qop(cell, "add", 3, "fgate_cx", "igate_cgate") + "\n" + "    return " +
         qop(cell, "mul", 4, "torch.sigmoid(gates[3])", "torch.tanh(cy)") + ", cy\n";
}

/// `run_<i>(x, h, c)`: _LSTMSingleLayer.forward, the cell over the sequence.
std::string run_method(size_t i) {
  std::string n = std::to_string(i);
  return "def run_" + n + "(self, x: Tensor, h: Tensor, c: Tensor) -> Tuple[Tensor, Tensor, Tensor]:\n" +
         "    result: List[Tensor] = []\n" + "    for t in range(x.size(0)):\n" + "        h, c = self.cell_" + n +
         "(x[t], h, c)\n" + "        result.append(h)\n" + "    return torch.stack(result, 0), h, c\n";
}

/// The lines of forward for one layer (_LSTMLayer.forward).
std::string layer_lines(const nn::RecurrentShape& s, int64_t layer) {
  std::string l = std::to_string(layer);
  if (!s.bidirectional) {
    std::string run = std::to_string(layer);
    return "    x, h, c = self.run_" + run + "(x, hs[" + l + "], cs[" + l + "])\n" +
           "    h_n.append(h)\n    c_n.append(c)\n";
  }
  std::string fw = std::to_string(2 * layer), bw = std::to_string(2 * layer + 1);
  return "    fw, h_fw, c_fw = self.run_" + fw + "(x, hs[" + l + "][0], cs[" + l + "][0])\n" +
         "    bw, h_bw, c_bw = self.run_" + bw + "(x.flip(0), hs[" + l + "][1], cs[" + l + "][1])\n" +
         "    x = torch.cat([fw, bw.flip(0)], fw.dim() - 1)\n" + "    h_n.append(torch.stack([h_fw, h_bw], 0))\n" +
         "    c_n.append(torch.stack([c_fw, c_bw], 0))\n";
}

/// forward: PyTorch's quantizable LSTM.forward.
std::string forward_method(const nn::RecurrentShape& s) {
  std::string layers = std::to_string(s.num_layers), dirs = s.bidirectional ? "2" : "1";
  std::string hidden = std::to_string(s.hidden_size);
  std::string squeeze = s.bidirectional ? "" : ".squeeze(0)";
  std::string out = "def forward(self, input: Tensor, hx: Optional[Tuple[Tensor, Tensor]]=None):\n";
  out += std::string("    x = input") + (s.batch_first ? ".transpose(0, 1)" : "") + "\n";
  out += "    if hx is None:\n";
  out += "        zeros = torch.zeros([" + dirs + ", x.size(1), " + hidden + "])" + squeeze + "\n";
  out += "        if x.is_quantized:\n";
  out += "            zeros = torch.quantize_per_tensor(zeros, 1.0, 0, x.dtype)\n";
  out += "        hs = [zeros for _ in range(" + layers + ")]\n";
  out += "        cs = [zeros for _ in range(" + layers + ")]\n";
  out += "    else:\n";
  for (const char* part : {"hs", "cs"}) {
    std::string index = part[0] == 'h' ? "0" : "1";
    out += std::string("        ") + part + " = [t" + squeeze + " for t in hx[" + index + "].reshape([" + layers +
           ", " + dirs + ", x.size(1), " + hidden + "]).unbind(0)]\n";
  }
  out += "    h_n: List[Tensor] = []\n    c_n: List[Tensor] = []\n";
  for (int64_t layer = 0; layer < s.num_layers; ++layer) out += layer_lines(s, layer);
  out += "    h = torch.stack(h_n)\n    c = torch.stack(c_n)\n";
  out += "    h = h.reshape([-1, h.size(-2), h.size(-1)])\n    c = c.reshape([-1, c.size(-2), c.size(-1)])\n";
  if (s.batch_first) out += "    x = x.transpose(0, 1)\n";
  return out + "    return x, (h, c)\n";
}

}  // namespace

std::string quantized_lstm_submodule(const nn::QuantizedLSTMImpl& lstm, const std::string& path, ScriptAttrs& attrs) {
  ScriptAttrs own(attrs.unit());  // the submodule's packed weights
  std::string source = forward_method(lstm.shape());
  for (size_t i = 0; i < lstm.cells().size(); ++i) source += cell_method(lstm.cells()[i], i, own) + run_method(i);
  torch::jit::Module sub = attrs.new_module("torch.ao.nn.quantized.LSTM");
  mark_eval(sub);
  for (const auto& [name, value] : own.values()) sub.register_attribute(name, value.type(), value);
  define_forward(sub, source);
  return attrs.add(path, sub._ivalue());
}

}  // namespace qfx::io::detail
