// The reference and dynamically quantized LSTM, as PyTorch 1.13's
// torch.ao.nn.quantized.reference.LSTM (from_float, get_flat_weights) and
// torch.ao.nn.quantized.dynamic.LSTM (from_reference, forward_tensor).

#include "qfx/nn/quantized_rnn.h"

#include "module_kinds.h"
#include "quantized_kinds.h"

#include "qfx/quant/observer_base.h"

#include <ATen/ATen.h>
#include <torch/nn/modules/rnn.h>

namespace qfx::nn {
namespace {

bool is_weight(const std::string& name) { return name.rfind("weight_", 0) == 0; }

/// (h_0, c_0) from the `hx` argument, zeros when it is None (Python's forward).
std::vector<at::Tensor> initial_state(const torch::nn::LSTMOptions& o, const at::Tensor& input,
                                      const c10::IValue& hx) {
  if (!hx.isNone()) {
    auto [h, c] = detail::lstm_state(hx);
    return {h, c};
  }
  TORCH_CHECK(input.dim() == 3, "LSTM takes a batched 3-d input, got ", input.dim(), " dimensions");
  int64_t batch = input.size(o.batch_first() ? 0 : 1);
  at::Tensor zeros = at::zeros({o.num_layers() * (o.bidirectional() ? 2 : 1), batch, o.hidden_size()}, input.options());
  return {zeros, zeros};
}

c10::IValue nested(const std::tuple<at::Tensor, at::Tensor, at::Tensor>& result) {
  return c10::ivalue::Tuple::create(std::get<0>(result),
                                    c10::ivalue::Tuple::create(std::get<1>(result), std::get<2>(result)));
}

const char* const kReference = "torch.ao.nn.quantized.reference.LSTM";
const char* const kDynamic = "torch.ao.nn.quantized.dynamic.LSTM";

std::string lstm_sizes(const torch::nn::LSTMOptions& o) {
  std::string s = std::to_string(o.input_size()) + ", " + std::to_string(o.hidden_size());
  if (o.num_layers() != 1) s += ", num_layers=" + std::to_string(o.num_layers());
  if (o.batch_first()) s += ", batch_first=True";
  if (o.bidirectional()) s += ", bidirectional=True";
  return s;
}

template <typename Impl>
c10::IValue forward_adaptor(torch::nn::Module& m, std::vector<c10::IValue>& in) {
  TORCH_CHECK(!in.empty() && in.size() <= 2 && in[0].isTensor(), m.name(),
              " takes an input tensor and an optional (h_0, c_0)");
  return dynamic_cast<Impl&>(m).forward(in[0].toTensor(), in.size() == 2 ? in[1] : c10::IValue());
}

const bool kRegistered = [] {
  detail::add_kind<ReferenceLSTMImpl>(
      kReference, [](const torch::nn::Module& m) { return lstm_sizes(detail::as<ReferenceLSTMImpl>(m).options()); },
      forward_adaptor<ReferenceLSTMImpl>);
  detail::add_kind<DynamicQuantizedLSTMImpl>(
      kDynamic,
      [](const torch::nn::Module& m) { return lstm_sizes(detail::as<DynamicQuantizedLSTMImpl>(m).options()); },
      forward_adaptor<DynamicQuantizedLSTMImpl>);
  return true;
}();

}  // namespace

bool has_reference_rnn(const std::string& float_type) { return float_type == "torch.nn.LSTM"; }

ReferenceLSTMImpl::ReferenceLSTMImpl(std::shared_ptr<torch::nn::LSTMImpl> float_module,
                                     std::map<std::string, WeightQParams> qparams)
    : float_(std::move(float_module)), qparams_(std::move(qparams)) {
  for (const auto& p : float_->named_parameters(/*recurse=*/false)) register_parameter(p.key(), p.value());
  dequantized_ = std::dynamic_pointer_cast<torch::nn::LSTMImpl>(float_->clone());
  torch::NoGradGuard no_grad;
  for (auto& p : dequantized_->named_parameters(/*recurse=*/false)) {
    if (is_weight(p.key())) p.value().copy_(quantize_dequantize_weight(p.value(), qparams_.at(p.key())));
  }
  train(float_->is_training());
}

const torch::nn::LSTMOptions& ReferenceLSTMImpl::options() const { return float_->options; }

at::Tensor ReferenceLSTMImpl::quantized_weight(const std::string& name) const {
  return quantize_weight(*float_->named_parameters(false).find(name), qparams_.at(name));
}

c10::IValue ReferenceLSTMImpl::forward(const at::Tensor& input, const c10::IValue& hx) {
  std::vector<at::Tensor> state = initial_state(options(), input, hx);
  std::vector<at::Tensor> weights = dequantized_->all_weights();
  const auto& o = options();
  return nested(at::lstm(input, state, weights, o.bias(), o.num_layers(), o.dropout(), false, o.bidirectional(),
                         o.batch_first()));
}

std::shared_ptr<ReferenceLSTMImpl> reference_lstm_from_float(const std::shared_ptr<torch::nn::Module>& float_module,
                                                            const quant::ObserverSpec& weight) {
  auto lstm = std::dynamic_pointer_cast<torch::nn::LSTMImpl>(float_module);
  TORCH_CHECK(lstm != nullptr, "reference_lstm_from_float needs a torch.nn.LSTM");
  std::map<std::string, WeightQParams> qparams;
  for (const auto& p : lstm->named_parameters(/*recurse=*/false)) {
    if (!is_weight(p.key())) continue;
    std::shared_ptr<quant::ActivationPostProcess> observer = weight.make();
    observer->forward(p.value().detach());
    qparams.emplace(p.key(), weight_qparams_of(*observer));
  }
  return std::make_shared<ReferenceLSTMImpl>(lstm, std::move(qparams));
}

DynamicQuantizedLSTMImpl::DynamicQuantizedLSTMImpl(torch::nn::LSTMOptions options, std::vector<c10::IValue> cell_params)
    : options_(std::move(options)), cell_params_(cell_params.at(0).type()) {
  for (c10::IValue& cell : cell_params) cell_params_.push_back(std::move(cell));
  train(false);
}

std::shared_ptr<DynamicQuantizedLSTMImpl> DynamicQuantizedLSTMImpl::from_reference(const ReferenceLSTMImpl& reference) {
  const torch::nn::LSTMOptions& o = reference.options();
  auto params = reference.float_module()->named_parameters(/*recurse=*/false);
  std::vector<c10::IValue> cells;
  for (int64_t layer = 0; layer < o.num_layers(); ++layer) {
    for (const char* suffix : {"", "_reverse"}) {
      if (*suffix != '\0' && !o.bidirectional()) continue;
      std::string at = "_l" + std::to_string(layer) + suffix;
      at::Tensor w_ih = reference.quantized_weight("weight_ih" + at), w_hh = reference.quantized_weight("weight_hh" + at);
      TORCH_CHECK(w_ih.scalar_type() == c10::kQInt8, kDynamic, " needs qint8 weights, got ", w_ih.scalar_type());
      const at::Tensor* b_ih = params.find("bias_ih" + at);
      const at::Tensor* b_hh = params.find("bias_hh" + at);
      c10::IValue bias_ih = b_ih ? c10::IValue(*b_ih) : c10::IValue(), bias_hh = b_hh ? c10::IValue(*b_hh) : c10::IValue();
      c10::IValue packed_ih = detail::call_op("quantized::linear_prepack", "", {w_ih, bias_ih});
      c10::IValue packed_hh = detail::call_op("quantized::linear_prepack", "", {w_hh, bias_hh});
      cells.push_back(detail::call_op("quantized::make_quantized_cell_params_dynamic", "",
                                      {packed_ih, packed_hh, bias_ih, bias_hh, true}));
    }
  }
  return std::make_shared<DynamicQuantizedLSTMImpl>(o, std::move(cells));
}

c10::IValue DynamicQuantizedLSTMImpl::forward(const at::Tensor& input, const c10::IValue& hx) {
  std::vector<at::Tensor> state = initial_state(options_, input, hx);
  std::vector<c10::IValue> out = detail::call_op_returning_all(
      "aten::quantized_lstm", "input",
      {input, c10::List<at::Tensor>(state), cell_params_, options_.bias(), options_.num_layers(), options_.dropout(), false,
       options_.bidirectional(), options_.batch_first(), c10::kQInt8, true});
  return nested({out.at(0).toTensor(), out.at(1).toTensor(), out.at(2).toTensor()});
}

}  // namespace qfx::nn
