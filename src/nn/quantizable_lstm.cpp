// The static LSTM of PyTorch's custom module flow, observed and quantized:
// one sequence driver (PyTorch's quantizable LSTM.forward, _LSTMLayer and
// _LSTMSingleLayer) over two cell computations (QuantizableLSTMCell.forward
// in float with observers, and after eager convert on quint8 tensors).

#include "qfx/nn/quantizable_lstm.h"

#include "module_kinds.h"
#include "quantized_kinds.h"

#include "qfx/nn/custom_modules.h"
#include "qfx/nn/quantized.h"

#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>

#include <functional>
#include <utility>

namespace qfx::nn {
namespace {

using State = std::pair<at::Tensor, at::Tensor>;
/// One cell step: cell index (layer * directions + direction), x_t, (h, c) -> (h', c').
using CellStep = std::function<State(size_t, const at::Tensor&, const State&)>;

size_t directions(const RecurrentShape& s) { return s.bidirectional ? 2 : 1; }

/// _LSTMSingleLayer.forward: the cell over the time steps, outputs stacked.
std::pair<at::Tensor, State> single_layer(const CellStep& step, size_t cell, const at::Tensor& x, State hidden) {
  std::vector<at::Tensor> result;
  for (int64_t t = 0; t < x.size(0); ++t) {
    hidden = step(cell, x[t], hidden);
    result.push_back(hidden.first);
  }
  return {at::stack(result, 0), hidden};
}

/// _LSTMLayer.forward (batch_first is handled by the LSTM): forward and,
/// if bidirectional, reverse direction over the sequence.
std::pair<at::Tensor, State> layer_forward(const RecurrentShape& s, const CellStep& step, size_t layer,
                                           const at::Tensor& x, const State& hidden) {
  size_t first = layer * directions(s);
  if (!s.bidirectional) return single_layer(step, first, x, hidden);
  auto [result_fw, hidden_fw] = single_layer(step, first, x, {hidden.first[0], hidden.second[0]});
  auto [result_bw, hidden_bw] = single_layer(step, first + 1, x.flip(0), {hidden.first[1], hidden.second[1]});
  at::Tensor result = at::cat({result_fw, result_bw.flip(0)}, result_fw.dim() - 1);
  return {result,
          {at::stack({hidden_fw.first, hidden_bw.first}, 0), at::stack({hidden_fw.second, hidden_bw.second}, 0)}};
}

/// The initial state of every layer: zeros (quint8 with scale 1 and zero
/// point 0 on a quantized input) unless `(h_0, c_0)` is given.
std::vector<State> initial_states(const RecurrentShape& s, const at::Tensor& x, const std::vector<c10::IValue>& in) {
  int64_t batch = x.size(1), dirs = static_cast<int64_t>(directions(s));
  std::vector<State> states;
  if (in.size() < 2 || in[1].isNone()) {
    at::Tensor zeros = at::zeros({dirs, batch, s.hidden_size}, at::kFloat);
    zeros.squeeze_(0);
    if (x.is_quantized()) zeros = at::quantize_per_tensor(zeros, 1.0, 0, x.scalar_type());
    return std::vector<State>(s.num_layers, {zeros, zeros});
  }
  auto [h, c] = detail::lstm_state(in[1]);
  std::vector<at::Tensor> hs = h.reshape({s.num_layers, dirs, batch, s.hidden_size}).unbind(0);
  std::vector<at::Tensor> cs = c.reshape({s.num_layers, dirs, batch, s.hidden_size}).unbind(0);
  for (int64_t i = 0; i < s.num_layers; ++i) states.emplace_back(hs[i].squeeze_(0), cs[i].squeeze_(0));
  return states;
}

/// PyTorch's quantizable LSTM.forward over any cell step.
c10::IValue lstm_forward(const RecurrentShape& s, const CellStep& step, std::vector<c10::IValue>& in) {
  TORCH_CHECK(!in.empty() && in.size() <= 2 && in[0].isTensor(),
              "LSTM takes an input tensor and an optional (h_0, c_0), got ", in.size(), " input(s)");
  at::Tensor x = in[0].toTensor();
  TORCH_CHECK(x.dim() == 3, "LSTM: expected a 3-D input (sequence, batch, feature), got ", x.dim(), " dimension(s)");
  if (s.batch_first) x = x.transpose(0, 1);
  std::vector<State> states = initial_states(s, x, in);
  std::vector<at::Tensor> hs, cs;
  for (int64_t layer = 0; layer < s.num_layers; ++layer) {
    auto [out, hc] = layer_forward(s, step, layer, x, states[layer]);
    x = out;
    hs.push_back(hc.first);
    cs.push_back(hc.second);
  }
  at::Tensor h = at::stack(hs), c = at::stack(cs);
  h = h.reshape({-1, h.size(-2), h.size(-1)});
  c = c.reshape({-1, c.size(-2), c.size(-1)});
  if (s.batch_first) x = x.transpose(0, 1);
  return c10::ivalue::Tuple::create(x, c10::ivalue::Tuple::create(h, c));
}

at::Tensor linear_forward(torch::nn::Module& linear, const at::Tensor& x) {
  return dynamic_cast<torch::nn::LinearImpl&>(linear).forward(x);
}

/// QuantizableLSTMCell.forward in float: each part's output observed.
State observed_cell(const ObservedLSTMCell& cell, const at::Tensor& x, const State& hidden) {
  auto observe = [&](size_t part, const at::Tensor& value) { return cell.observers[part]->forward(value); };
  at::Tensor igates = observe(0, linear_forward(*cell.igates, x));
  at::Tensor hgates = observe(1, linear_forward(*cell.hgates, hidden.first));
  std::vector<at::Tensor> gates = observe(2, at::add(igates, hgates)).chunk(4, 1);
  at::Tensor fgate_cx = observe(3, at::mul(at::sigmoid(gates[1]), hidden.second));
  at::Tensor igate_cgate = observe(4, at::mul(at::sigmoid(gates[0]), at::tanh(gates[2])));
  at::Tensor cy = observe(5, at::add(fgate_cx, igate_cgate));
  return {observe(6, at::mul(at::sigmoid(gates[3]), at::tanh(cy))), cy};
}

/// The same cell after eager convert: QuantizedLinear, QFunctional add/mul,
/// the quantized sigmoid/tanh kernels.
State quantized_cell(const QuantizedLSTMCell& cell, const at::Tensor& x, const State& hidden) {
  auto op = [&](const char* name, size_t part, const at::Tensor& a, const at::Tensor& b) {
    return detail::call_op(name, "", {a, b, cell.scales[part], cell.zero_points[part]}).toTensor();
  };
  auto linear = [](torch::nn::Module& m, const at::Tensor& input) {
    std::vector<c10::IValue> in{input};
    return dynamic_cast<QuantizedModuleImpl&>(m).forward(in).toTensor();
  };
  at::Tensor igates = linear(*cell.igates, x);
  at::Tensor hgates = linear(*cell.hgates, hidden.first);
  std::vector<at::Tensor> gates = op("quantized::add", 0, igates, hgates).chunk(4, 1);
  at::Tensor fgate_cx = op("quantized::mul", 1, at::sigmoid(gates[1]), hidden.second);
  at::Tensor igate_cgate = op("quantized::mul", 2, at::sigmoid(gates[0]), at::tanh(gates[2]));
  at::Tensor cy = op("quantized::add", 3, fgate_cx, igate_cgate);
  return {op("quantized::mul", 4, at::sigmoid(gates[3]), at::tanh(cy)), cy};
}

/// A plain container module printed as `name` (ModuleList, _LSTMLayer, ...).
std::shared_ptr<torch::nn::Module> container(const std::string& name) {
  return std::make_shared<torch::nn::Module>(name);
}

/// The `layers.<i>.layer_<fw|bw>.cell` module of Python's tree, made on demand.
std::shared_ptr<torch::nn::Module> cell_module(torch::nn::Module& lstm, const RecurrentShape& s, size_t index) {
  auto child = [](torch::nn::Module& parent, const std::string& key, const std::string& name) {
    auto* found = parent.named_children().find(key);
    return found != nullptr ? *found : parent.register_module(key, container(name));
  };
  auto layers = child(lstm, "layers", "ModuleList");
  auto layer = child(*layers, std::to_string(index / directions(s)), "_LSTMLayer");
  auto single = child(*layer, index % directions(s) == 0 ? "layer_fw" : "layer_bw", "_LSTMSingleLayer");
  return child(*single, "cell", "QuantizableLSTMCell");
}

std::shared_ptr<torch::nn::Module> float_linear(const at::Tensor& weight, const c10::optional<at::Tensor>& bias) {
  auto linear = std::make_shared<torch::nn::LinearImpl>(
      torch::nn::LinearOptions(weight.size(1), weight.size(0)).bias(bias.has_value()));
  torch::NoGradGuard no_grad;
  linear->weight.set_data(weight.detach().clone());
  if (bias) linear->bias.set_data(bias->detach().clone());
  return linear;
}

/// The parameter `name` of a float LSTM, if it has one.
c10::optional<at::Tensor> lstm_param(const torch::nn::Module& lstm, const std::string& name) {
  auto params = lstm.named_parameters(/*recurse=*/false);
  const at::Tensor* found = params.find(name);
  return found != nullptr ? c10::optional<at::Tensor>(*found) : c10::nullopt;
}

}  // namespace

const std::vector<std::string>& lstm_cell_part_names() {
  static const std::vector<std::string> names{
      "igates", "hgates", "gates", "fgate_cx", "igate_cgate", "fgate_cx_igate_cgate", "ogate_cy"};
  return names;
}

QuantizableLSTMImpl::QuantizableLSTMImpl(RecurrentShape shape, std::vector<ObservedLSTMCell> cells,
                                         quant::QConfig qconfig)
    : torch::nn::Module("QuantizableLSTM"),
      shape_(std::move(shape)),
      cells_(std::move(cells)),
      qconfig_(std::move(qconfig)) {
  for (size_t i = 0; i < cells_.size(); ++i) {
    auto cell = cell_module(*this, shape_, i);
    cell->register_module("igates", cells_[i].igates);
    cell->register_module("hgates", cells_[i].hgates);
    for (size_t part = 0; part < cells_[i].observers.size(); ++part) {
      auto owner = part < 2 ? (part == 0 ? cells_[i].igates : cells_[i].hgates)
                            : cell->register_module(lstm_cell_part_names()[part], container("FloatFunctional"));
      owner->register_module("activation_post_process", cells_[i].observers[part]);
    }
  }
}

namespace {

/// A copy of an observed cell: its Linear layers anew (they hold observers
/// as children, which clone() would not take) and copies of its observers.
ObservedLSTMCell copy_cell(const ObservedLSTMCell& cell) {
  auto linear = [](const std::shared_ptr<torch::nn::Module>& m) {
    const auto& l = dynamic_cast<const torch::nn::LinearImpl&>(*m);
    auto copy = float_linear(l.weight, l.bias.defined() ? c10::optional<at::Tensor>(l.bias) : c10::nullopt);
    copy->train(l.is_training());
    return copy;
  };
  ObservedLSTMCell copy{linear(cell.igates), linear(cell.hgates), {}};
  for (const auto& observer : cell.observers) copy.observers.push_back(deep_copy_of(observer));
  return copy;
}

std::vector<ObservedLSTMCell> copy_cells(const std::vector<ObservedLSTMCell>& cells) {
  std::vector<ObservedLSTMCell> copies;
  for (const ObservedLSTMCell& cell : cells) copies.push_back(copy_cell(cell));
  return copies;
}

std::vector<QuantizedLSTMCell> copy_cells(const std::vector<QuantizedLSTMCell>& cells) {
  std::vector<QuantizedLSTMCell> copies;
  for (const QuantizedLSTMCell& cell : cells) {
    copies.push_back({deep_copy_of(cell.igates), deep_copy_of(cell.hgates), cell.scales, cell.zero_points});
  }
  return copies;
}

}  // namespace

QuantizableLSTMImpl::QuantizableLSTMImpl(const QuantizableLSTMImpl& other, DeepCopy)
    : QuantizableLSTMImpl(other.shape_, copy_cells(other.cells_), other.qconfig_) {
  copy_training_modes(other, *this);
}

std::shared_ptr<torch::nn::Module> QuantizableLSTMImpl::clone(const c10::optional<torch::Device>& device) const {
  return clone_through<QuantizableLSTMImpl>(*this, device);
}

std::shared_ptr<QuantizableLSTMImpl> QuantizableLSTMImpl::from_float(const torch::nn::Module& lstm,
                                                                     const quant::QConfig& qconfig) {
  RecurrentShape shape = recurrent_shape(lstm);
  TORCH_CHECK(shape.float_type == "torch.nn.LSTM",
              "torch.ao.nn.quantizable.LSTM.from_float takes a torch.nn.LSTM, got ", shape.float_type);
  std::vector<ObservedLSTMCell> cells;
  for (int64_t layer = 0; layer < shape.num_layers; ++layer) {
    for (size_t dir = 0; dir < directions(shape); ++dir) {
      std::string suffix = "_l" + std::to_string(layer) + (dir == 1 ? "_reverse" : "");
      ObservedLSTMCell cell;
      cell.igates = float_linear(*lstm_param(lstm, "weight_ih" + suffix), lstm_param(lstm, "bias_ih" + suffix));
      cell.hgates = float_linear(*lstm_param(lstm, "weight_hh" + suffix), lstm_param(lstm, "bias_hh" + suffix));
      for (size_t part = 0; part < lstm_cell_part_names().size(); ++part)
        cell.observers.push_back(qconfig.activation.make());
      cells.push_back(std::move(cell));
    }
  }
  return std::make_shared<QuantizableLSTMImpl>(shape, std::move(cells), qconfig);
}

c10::IValue QuantizableLSTMImpl::forward(std::vector<c10::IValue>& inputs) {
  torch::NoGradGuard no_grad;
  return lstm_forward(
      shape_, [this](size_t i, const at::Tensor& x, const State& h) { return observed_cell(cells_[i], x, h); }, inputs);
}

QuantizedLSTMImpl::QuantizedLSTMImpl(RecurrentShape shape, std::vector<QuantizedLSTMCell> cells)
    : torch::nn::Module("QuantizedLSTM"), shape_(std::move(shape)), cells_(std::move(cells)) {
  for (size_t i = 0; i < cells_.size(); ++i) {
    auto cell = cell_module(*this, shape_, i);
    cell->register_module("igates", cells_[i].igates);
    cell->register_module("hgates", cells_[i].hgates);
  }
}

QuantizedLSTMImpl::QuantizedLSTMImpl(const QuantizedLSTMImpl& other, DeepCopy)
    : QuantizedLSTMImpl(other.shape_, copy_cells(other.cells_)) {
  copy_training_modes(other, *this);
}

std::shared_ptr<torch::nn::Module> QuantizedLSTMImpl::clone(const c10::optional<torch::Device>& device) const {
  return clone_through<QuantizedLSTMImpl>(*this, device);
}

std::shared_ptr<torch::nn::Module> DeQuantStubImpl::clone(const c10::optional<torch::Device>& device) const {
  check_clone_device(device, name());
  auto copy = std::make_shared<DeQuantStubImpl>();
  copy->train(is_training());
  return copy;
}

std::shared_ptr<QuantizedLSTMImpl> QuantizedLSTMImpl::from_observed(const QuantizableLSTMImpl& observed) {
  std::vector<QuantizedLSTMCell> cells;
  for (const ObservedLSTMCell& part : observed.cells()) {
    std::vector<OutputQParams> outputs;  // each observer's search once
    for (const auto& observer : part.observers) {
      quant::QParams q = observer->calculate_qparams();
      outputs.push_back({q.scale.item<double>(), q.zero_point.item<int64_t>()});
    }
    QuantizedLSTMCell cell;
    cell.igates = quantized_from_float("torch.ao.nn.quantized.Linear", part.igates, observed.qconfig(), outputs[0]);
    cell.hgates = quantized_from_float("torch.ao.nn.quantized.Linear", part.hgates, observed.qconfig(), outputs[1]);
    for (size_t i = 2; i < outputs.size(); ++i) {
      cell.scales.push_back(outputs[i].scale);
      cell.zero_points.push_back(outputs[i].zero_point);
    }
    cells.push_back(std::move(cell));
  }
  return std::make_shared<QuantizedLSTMImpl>(observed.shape(), std::move(cells));
}

c10::IValue QuantizedLSTMImpl::forward(std::vector<c10::IValue>& inputs) {
  return lstm_forward(
      shape_, [this](size_t i, const at::Tensor& x, const State& h) { return quantized_cell(cells_[i], x, h); },
      inputs);
}

void register_lstm_kinds() {
  ir::ModuleRegistry::instance().add({"torch.ao.quantization.DeQuantStub", typeid(DeQuantStubImpl),
                                      [](torch::nn::Module&, std::vector<c10::IValue>& in) { return in.at(0); },
                                      nullptr, "DeQuantStub"});
  ir::ModuleRegistry::instance().add({"torch.ao.nn.quantizable.LSTM", typeid(QuantizableLSTMImpl),
                                      [](torch::nn::Module& m, std::vector<c10::IValue>& in) {
                                        return dynamic_cast<QuantizableLSTMImpl&>(m).forward(in);
                                      },
                                      nullptr, "QuantizableLSTM"});
  ir::ModuleRegistry::instance().add({"torch.ao.nn.quantized.LSTM", typeid(QuantizedLSTMImpl),
                                      [](torch::nn::Module& m, std::vector<c10::IValue>& in) {
                                        return dynamic_cast<QuantizedLSTMImpl&>(m).forward(in);
                                      },
                                      nullptr, "QuantizedLSTM"});
  register_custom_module_class(
      {"torch.ao.nn.quantizable.LSTM",
       [](const torch::nn::Module& lstm, const quant::QConfig& qconfig) -> std::shared_ptr<torch::nn::Module> {
         return QuantizableLSTMImpl::from_float(lstm, qconfig);
       },
       nullptr});
  register_custom_module_class(
      {"torch.ao.nn.quantized.LSTM", nullptr,
       [](const torch::nn::Module& observed, quant::ActivationPostProcess*) -> std::shared_ptr<torch::nn::Module> {
         const auto* lstm = dynamic_cast<const QuantizableLSTMImpl*>(&observed);
         TORCH_CHECK(lstm != nullptr, "torch.ao.nn.quantized.LSTM.from_observed takes a torch.ao.nn.quantizable.LSTM");
         return QuantizedLSTMImpl::from_observed(*lstm);
       }});
}

}  // namespace qfx::nn
