#pragma once
/// \file
/// The reference and dynamically quantized LSTM (torch.ao.nn.quantized.
/// reference.LSTM, torch.ao.nn.quantized.dynamic.LSTM): convert_to_reference
/// gives an LSTM its weights' qparams, lower-to-native packs them for
/// ATen's quantized_lstm.
///
/// \code
///   auto ref = qfx::nn::reference_lstm_from_float(lstm, qconfig.weight);  // one observer per weight
///   auto q = qfx::nn::DynamicQuantizedLSTMImpl::from_reference(*ref);
///   c10::IValue out = q->forward(x, c10::IValue());  // (output, (h_n, c_n))
/// \endcode

#include "qfx/nn/reference.h"
#include "qfx/quant/qconfig.h"

#include <ATen/core/ivalue.h>
#include <torch/nn/module.h>
#include <torch/nn/options/rnn.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace torch::nn {
class LSTMImpl;
}

namespace qfx::nn {

/// True for the recurrent module types with a reference quantized module
/// here (`torch.nn.LSTM`).
bool has_reference_rnn(const std::string& float_type);

/// PyTorch's reference LSTM: the float LSTM's parameters, and the qparams of
/// each weight (`weight_ih_l0`, `weight_hh_l0_reverse`, ...); its forward
/// runs the LSTM on the quantize-dequantized weights.
class ReferenceLSTMImpl : public torch::nn::Module {
 public:
  ReferenceLSTMImpl(std::shared_ptr<torch::nn::LSTMImpl> float_module, std::map<std::string, WeightQParams> qparams);
  /// `hx`: (h_0, c_0), or None for zeros. Returns (output, (h_n, c_n)).
  c10::IValue forward(const at::Tensor& input, const c10::IValue& hx);
  const torch::nn::LSTMOptions& options() const;
  /// The float LSTM.
  const std::shared_ptr<torch::nn::LSTMImpl>& float_module() const { return float_; }
  /// An LSTM whose weights are the quantize-dequantized ones (what forward runs).
  const std::shared_ptr<torch::nn::LSTMImpl>& dequantized() const { return dequantized_; }
  /// The weight `name` quantized with its qparams.
  at::Tensor quantized_weight(const std::string& name) const;

 private:
  std::shared_ptr<torch::nn::LSTMImpl> float_;
  std::shared_ptr<torch::nn::LSTMImpl> dequantized_;
  std::map<std::string, WeightQParams> qparams_;
};

/// The reference LSTM of `float_module`, each weight observed by a fresh
/// `weight` observer (PyTorch's nnqr.LSTM.from_float with
/// get_qparam_dict per weight).
std::shared_ptr<ReferenceLSTMImpl> reference_lstm_from_float(const std::shared_ptr<torch::nn::Module>& float_module,
                                                            const quant::ObserverSpec& weight);

/// PyTorch's dynamically quantized LSTM: per layer and direction, the int8
/// weights prepacked with their biases into ATen's cell params
/// (`quantized::make_quantized_cell_params_dynamic`, reduce_range), run by
/// `aten::quantized_lstm` with `use_dynamic=True`.
class DynamicQuantizedLSTMImpl : public torch::nn::Module {
 public:
  DynamicQuantizedLSTMImpl(torch::nn::LSTMOptions options, std::vector<c10::IValue> cell_params);
  /// PyTorch's from_reference.
  static std::shared_ptr<DynamicQuantizedLSTMImpl> from_reference(const ReferenceLSTMImpl& reference);
  /// `hx`: (h_0, c_0), or None for zeros. Returns (output, (h_n, c_n)).
  c10::IValue forward(const at::Tensor& input, const c10::IValue& hx);
  const torch::nn::LSTMOptions& options() const { return options_; }
  /// One `__torch__.torch.classes.rnn.CellParamsBase` per layer and
  /// direction, as the `List[CellParamsBase]` quantized_lstm takes.
  const c10::impl::GenericList& cell_params() const { return cell_params_; }

 private:
  torch::nn::LSTMOptions options_;
  c10::impl::GenericList cell_params_;
};

}  // namespace qfx::nn
