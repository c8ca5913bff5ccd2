// The reference and dynamically quantized recurrent modules, as PyTorch
// 1.13's torch.ao.nn.quantized.reference.{LSTM, GRUCell, LSTMCell, RNNCell}
// (from_float; forward on the quantize-dequantized weights) and
// torch.ao.nn.quantized.dynamic.{LSTM, GRU, LSTMCell, GRUCell, RNNCell}
// (from_reference / from_float: weights packed with their biases; forward).
// GRU's reference module is PyTorch 2.x's (1.13 has none): the same scheme.

#include "qfx/nn/quantized_rnn.h"

#include "module_kinds.h"
#include "quantized_kinds.h"

#include "qfx/quant/observer_base.h"

#include <ATen/ATen.h>
#include <torch/nn/modules/rnn.h>

namespace qfx::nn {
namespace {

bool is_weight(const std::string& name) { return name.rfind("weight_", 0) == 0; }

/// One C++ type per recurrent type, for the module registry.
template <typename FloatImpl>
class ReferenceRNN final : public ReferenceRNNImpl {
 public:
  using ReferenceRNNImpl::ReferenceRNNImpl;
  std::shared_ptr<torch::nn::Module> clone(const c10::optional<torch::Device>& device = c10::nullopt) const override {
    return clone_through<ReferenceRNN>(static_cast<const ReferenceRNNImpl&>(*this), device);
  }
};

template <typename FloatImpl>
class DynamicQuantizedRNN final : public DynamicQuantizedRNNImpl {
 public:
  using DynamicQuantizedRNNImpl::DynamicQuantizedRNNImpl;
  std::shared_ptr<torch::nn::Module> clone(const c10::optional<torch::Device>& device = c10::nullopt) const override {
    return clone_through<DynamicQuantizedRNN>(static_cast<const DynamicQuantizedRNNImpl&>(*this), device);
  }
};

/// Calls `make<FloatImpl>()` for the LibTorch type `module` is.
template <template <typename> class Make, typename... Args>
auto for_type(const torch::nn::Module& module, Args&&... args) {
  if (dynamic_cast<const torch::nn::LSTMImpl*>(&module)) return Make<torch::nn::LSTMImpl>()(args...);
  if (dynamic_cast<const torch::nn::GRUImpl*>(&module)) return Make<torch::nn::GRUImpl>()(args...);
  if (dynamic_cast<const torch::nn::LSTMCellImpl*>(&module)) return Make<torch::nn::LSTMCellImpl>()(args...);
  if (dynamic_cast<const torch::nn::GRUCellImpl*>(&module)) return Make<torch::nn::GRUCellImpl>()(args...);
  TORCH_CHECK(dynamic_cast<const torch::nn::RNNCellImpl*>(&module), "no quantized form of ",
              ir::module_type_name(module));
  return Make<torch::nn::RNNCellImpl>()(args...);
}

template <typename FloatImpl>
struct MakeReference {
  std::shared_ptr<ReferenceRNNImpl> operator()(std::shared_ptr<torch::nn::Module> m,
                                               std::map<std::string, WeightQParams> q) const {
    return std::make_shared<ReferenceRNN<FloatImpl>>(std::move(m), std::move(q));
  }
};

template <typename FloatImpl>
struct MakeDynamic {
  std::shared_ptr<DynamicQuantizedRNNImpl> operator()(RecurrentShape shape, std::vector<c10::IValue> params,
                                                      c10::IValue bias_ih, c10::IValue bias_hh) const {
    return std::make_shared<DynamicQuantizedRNN<FloatImpl>>(std::move(shape), std::move(params), std::move(bias_ih),
                                                            std::move(bias_hh));
  }
};

/// Python's extra_repr of nn.RNNBase / nn.RNNCellBase and their quantized forms.
std::string shape_repr(const RecurrentShape& s) {
  std::string out = std::to_string(s.input_size) + ", " + std::to_string(s.hidden_size);
  if (!s.is_cell() && s.num_layers != 1) out += ", num_layers=" + std::to_string(s.num_layers);
  if (!s.bias) out += ", bias=False";
  if (s.batch_first) out += ", batch_first=True";
  if (s.dropout != 0) out += ", dropout=" + detail::py_float(s.dropout);
  if (s.bidirectional) out += ", bidirectional=True";
  if (s.relu) out += ", nonlinearity='relu'";
  return out;
}

std::string short_name(const std::string& float_type) { return float_type.substr(float_type.rfind('.') + 1); }

/// The initial state when none is given: zeros, a pair of them for LSTMs.
c10::IValue zero_state(const RecurrentShape& s, const at::Tensor& input) {
  at::Tensor zeros;
  if (s.is_cell()) {
    TORCH_CHECK(input.dim() == 2, s.float_type, " (quantized) takes a batched 2-d input, got ", input.dim(),
                " dimensions");
    zeros = at::zeros({input.size(0), s.hidden_size}, input.options());
  } else {
    TORCH_CHECK(input.dim() == 3, s.float_type, " (quantized) takes a batched 3-d input, got ", input.dim(),
                " dimensions");
    int64_t batch = input.size(s.batch_first ? 0 : 1);
    zeros = at::zeros({s.num_layers * (s.bidirectional ? 2 : 1), batch, s.hidden_size}, input.options());
  }
  return s.is_lstm() ? c10::IValue(c10::ivalue::Tuple::create(zeros, zeros)) : c10::IValue(zeros);
}

/// An LSTM state `(h, c)` as the `Tensor[]` ATen's ops take.
c10::List<at::Tensor> state_list(const c10::IValue& hx) {
  auto [h, c] = detail::lstm_state(hx);
  return c10::List<at::Tensor>({h, c});
}

template <typename Impl>
c10::IValue forward_of(torch::nn::Module& m, std::vector<c10::IValue>& in) {
  return dynamic_cast<Impl&>(m).forward(in);
}

template <typename FloatImpl>
void register_kinds(const std::string& name) {
  auto repr = [](const torch::nn::Module& m) {
    if (auto* r = dynamic_cast<const ReferenceRNNImpl*>(&m)) return shape_repr(r->shape());
    return shape_repr(detail::as<DynamicQuantizedRNNImpl>(m).shape());
  };
  auto& registry = ir::ModuleRegistry::instance();
  registry.add({"torch.ao.nn.quantized.reference." + name, typeid(ReferenceRNN<FloatImpl>),
                forward_of<ReferenceRNNImpl>, repr, ""});
  registry.add({"torch.ao.nn.quantized.dynamic." + name, typeid(DynamicQuantizedRNN<FloatImpl>),
                forward_of<DynamicQuantizedRNNImpl>, repr, "DynamicQuantized" + name});
}

}  // namespace

void register_quantized_rnn_kinds() {
  register_kinds<torch::nn::LSTMImpl>("LSTM");
  register_kinds<torch::nn::GRUImpl>("GRU");
  register_kinds<torch::nn::LSTMCellImpl>("LSTMCell");
  register_kinds<torch::nn::GRUCellImpl>("GRUCell");
  register_kinds<torch::nn::RNNCellImpl>("RNNCell");
}

namespace {

/// The packed weights of one layer and direction (`suffix`: `_l0`, `_l1_reverse`,
/// or "" for a cell), and its biases.
struct PackedLayer {
  c10::IValue ih, hh, bias_ih, bias_hh;
};

PackedLayer pack_layer(const ReferenceRNNImpl& reference, const std::string& suffix) {
  auto params = reference.float_module()->named_parameters(/*recurse=*/false);
  at::Tensor w_ih = reference.quantized_weight("weight_ih" + suffix);
  at::Tensor w_hh = reference.quantized_weight("weight_hh" + suffix);
  TORCH_CHECK(w_ih.scalar_type() == c10::kQInt8, "torch.ao.nn.quantized.dynamic.",
              short_name(reference.shape().float_type), " needs qint8 weights, got ", w_ih.scalar_type(),
              " (float16 weights need FBGEMM's packing, which this LibTorch lacks)");
  const at::Tensor* b_ih = params.find("bias_ih" + suffix);
  const at::Tensor* b_hh = params.find("bias_hh" + suffix);
  PackedLayer layer;
  layer.bias_ih = b_ih ? c10::IValue(*b_ih) : c10::IValue();
  layer.bias_hh = b_hh ? c10::IValue(*b_hh) : c10::IValue();
  layer.ih = detail::call_op("quantized::linear_prepack", "", {w_ih, layer.bias_ih});
  layer.hh = detail::call_op("quantized::linear_prepack", "", {w_hh, layer.bias_hh});
  return layer;
}

}  // namespace

bool RecurrentShape::is_cell() const {
  return float_type.size() > 4 && float_type.compare(float_type.size() - 4, 4, "Cell") == 0;
}

bool RecurrentShape::is_lstm() const { return float_type == "torch.nn.LSTM" || float_type == "torch.nn.LSTMCell"; }

bool has_reference_rnn(const std::string& float_type) {
  return float_type == "torch.nn.LSTM" || float_type == "torch.nn.GRU" || float_type == "torch.nn.LSTMCell" ||
         float_type == "torch.nn.GRUCell" || float_type == "torch.nn.RNNCell";
}

RecurrentShape recurrent_shape(const torch::nn::Module& module) {
  RecurrentShape s;
  s.float_type = ir::module_type_name(module);
  auto layer_options = [&s](const torch::nn::detail::RNNOptionsBase& o) {
    s.input_size = o.input_size(), s.hidden_size = o.hidden_size(), s.num_layers = o.num_layers();
    s.bias = o.bias(), s.batch_first = o.batch_first(), s.bidirectional = o.bidirectional(), s.dropout = o.dropout();
    return s;
  };
  if (auto* lstm = dynamic_cast<const torch::nn::LSTMImpl*>(&module)) return layer_options(lstm->options_base);
  if (auto* gru = dynamic_cast<const torch::nn::GRUImpl*>(&module)) return layer_options(gru->options_base);
  if (auto* rnn = dynamic_cast<const torch::nn::RNNImpl*>(&module)) {
    layer_options(rnn->options_base);
    s.relu = c10::get_if<torch::enumtype::kReLU>(&rnn->options.nonlinearity()) != nullptr;
    return s;
  }
  auto cell_options = [&s](const torch::nn::detail::RNNCellOptionsBase& o) {
    s.input_size = o.input_size(), s.hidden_size = o.hidden_size(), s.bias = o.bias();
  };
  if (auto* cell = dynamic_cast<const torch::nn::LSTMCellImpl*>(&module)) {
    cell_options(cell->options_base);
  } else if (auto* gru_cell = dynamic_cast<const torch::nn::GRUCellImpl*>(&module)) {
    cell_options(gru_cell->options_base);
  } else {
    const auto& rnn_cell = detail::as<torch::nn::RNNCellImpl>(module);
    cell_options(rnn_cell.options_base);
    s.relu = c10::get_if<torch::enumtype::kReLU>(&rnn_cell.options.nonlinearity()) != nullptr;
  }
  return s;
}

ReferenceRNNImpl::ReferenceRNNImpl(std::shared_ptr<torch::nn::Module> float_module,
                                   std::map<std::string, WeightQParams> qparams)
    : float_(std::move(float_module)), qparams_(std::move(qparams)), shape_(recurrent_shape(*float_)) {
  for (const auto& p : float_->named_parameters(/*recurse=*/false)) register_parameter(p.key(), p.value());
  dequantized_ = float_->clone();
  torch::NoGradGuard no_grad;
  for (auto& p : dequantized_->named_parameters(/*recurse=*/false)) {
    if (is_weight(p.key())) p.value().copy_(quantize_dequantize_weight(p.value(), qparams_.at(p.key())));
  }
  train(float_->is_training());
}

namespace {

std::map<std::string, WeightQParams> copy_qparams(const std::map<std::string, WeightQParams>& qparams) {
  std::map<std::string, WeightQParams> copies;
  for (const auto& [name, q] : qparams) copies.emplace(name, deep_copy_of(q));
  return copies;
}

}  // namespace

ReferenceRNNImpl::ReferenceRNNImpl(const ReferenceRNNImpl& other, DeepCopy)
    : ReferenceRNNImpl(other.float_->clone(), copy_qparams(other.qparams_)) {
  train(other.is_training());
}

c10::IValue ReferenceRNNImpl::forward(std::vector<c10::IValue>& inputs) {
  const ir::ModuleKind* kind = ir::ModuleRegistry::instance().find(*dequantized_);
  TORCH_CHECK(kind != nullptr, "no forward for ", shape_.float_type);
  return kind->forward(*dequantized_, inputs);
}

at::Tensor ReferenceRNNImpl::quantized_weight(const std::string& name) const {
  return quantize_weight(*float_->named_parameters(false).find(name), qparams_.at(name));
}

std::shared_ptr<ReferenceRNNImpl> reference_rnn_from_float(const std::shared_ptr<torch::nn::Module>& float_module,
                                                           const quant::ObserverSpec& weight) {
  TORCH_CHECK(has_reference_rnn(ir::module_type_name(*float_module)), "no reference module of ",
              ir::module_type_name(*float_module));
  std::map<std::string, WeightQParams> qparams;
  for (const auto& p : float_module->named_parameters(/*recurse=*/false)) {
    if (!is_weight(p.key())) continue;
    std::shared_ptr<quant::ActivationPostProcess> observer = weight.make();
    observer->forward(p.value().detach());
    qparams.emplace(p.key(), weight_qparams_of(*observer));
  }
  return for_type<MakeReference>(*float_module, float_module, std::move(qparams));
}

DynamicQuantizedRNNImpl::DynamicQuantizedRNNImpl(RecurrentShape shape, std::vector<c10::IValue> params,
                                                 c10::IValue bias_ih, c10::IValue bias_hh)
    : shape_(std::move(shape)),
      cell_params_(shape_.is_cell() || params.empty() ? c10::AnyType::get() : params.at(0).type()),
      bias_ih_(std::move(bias_ih)),
      bias_hh_(std::move(bias_hh)) {
  if (shape_.is_cell()) {
    TORCH_CHECK(params.size() == 2, "a dynamic cell takes its two packed weights");
    TORCH_CHECK(bias_ih_.isTensor() && bias_hh_.isTensor(), "torch.ao.nn.quantized.dynamic.",
                short_name(shape_.float_type), " needs biases (ATen's quantized cells take them)");
    packed_ = std::move(params);
  } else {
    for (c10::IValue& cell : params) cell_params_.push_back(std::move(cell));
  }
  train(false);
}

namespace {

std::vector<c10::IValue> copy_values(const std::vector<c10::IValue>& values) {
  std::vector<c10::IValue> copies;
  for (const c10::IValue& v : values) copies.push_back(v.deepcopy());
  return copies;
}

}  // namespace

DynamicQuantizedRNNImpl::DynamicQuantizedRNNImpl(const DynamicQuantizedRNNImpl& other, DeepCopy)
    : DynamicQuantizedRNNImpl(other.shape_,
                              copy_values(other.shape_.is_cell() ? other.packed_ : other.cell_params_.vec()),
                              other.bias_ih_.deepcopy(), other.bias_hh_.deepcopy()) {
  train(other.is_training());
}

std::shared_ptr<DynamicQuantizedRNNImpl> DynamicQuantizedRNNImpl::from_reference(const ReferenceRNNImpl& reference) {
  const RecurrentShape& s = reference.shape();
  if (s.is_cell()) {
    PackedLayer layer = pack_layer(reference, "");
    return for_type<MakeDynamic>(*reference.float_module(), s, std::vector<c10::IValue>{layer.ih, layer.hh},
                                 layer.bias_ih, layer.bias_hh);
  }
  std::vector<c10::IValue> cells;
  for (int64_t i = 0; i < s.num_layers; ++i) {
    for (const char* direction : {"", "_reverse"}) {
      if (*direction != '\0' && !s.bidirectional) continue;
      PackedLayer layer = pack_layer(reference, "_l" + std::to_string(i) + direction);
      cells.push_back(detail::call_op("quantized::make_quantized_cell_params_dynamic", "",
                                      {layer.ih, layer.hh, layer.bias_ih, layer.bias_hh, true}));
    }
  }
  return for_type<MakeDynamic>(*reference.float_module(), s, std::move(cells), c10::IValue(), c10::IValue());
}

c10::IValue DynamicQuantizedRNNImpl::forward(std::vector<c10::IValue>& in) {
  TORCH_CHECK(!in.empty() && in.size() <= 2 && in[0].isTensor(), name(),
              " takes an input tensor and an optional initial state, got ", in.size(), " input(s)");
  const at::Tensor& input = in[0].toTensor();
  c10::IValue hx = in.size() == 2 && !in[1].isNone() ? in[1] : zero_state(shape_, input);
  const RecurrentShape& s = shape_;
  if (s.is_cell()) {
    c10::IValue state = s.is_lstm() ? c10::IValue(state_list(hx)) : hx;
    std::vector<c10::IValue> out = detail::call_op_returning_all(
        dynamic_cell_op(s).c_str(), "", {input, state, packed_[0], packed_[1], bias_ih_, bias_hh_});
    return out.size() == 1 ? out[0] : c10::IValue(c10::ivalue::Tuple::create(out[0], out[1]));
  }
  if (s.is_lstm()) {
    std::vector<c10::IValue> out =
        detail::call_op_returning_all("aten::quantized_lstm", "input",
                                      {input, state_list(hx), cell_params_, s.bias, s.num_layers, s.dropout, false,
                                       s.bidirectional, s.batch_first, c10::kQInt8, true});
    return c10::ivalue::Tuple::create(out.at(0), c10::ivalue::Tuple::create(out.at(1), out.at(2)));
  }
  std::vector<c10::IValue> out = detail::call_op_returning_all(
      "aten::quantized_gru", "input",
      {input, hx, cell_params_, s.bias, s.num_layers, s.dropout, false, s.bidirectional, s.batch_first});
  return c10::ivalue::Tuple::create(out.at(0), out.at(1));
}

std::string dynamic_cell_op(const RecurrentShape& shape) {
  std::string kind = shape.float_type == "torch.nn.LSTMCell"  ? "lstm"
                     : shape.float_type == "torch.nn.GRUCell" ? "gru"
                     : shape.relu                             ? "rnn_relu"
                                                              : "rnn_tanh";
  return "quantized::quantized_" + kind + "_cell_dynamic";
}

}  // namespace qfx::nn
