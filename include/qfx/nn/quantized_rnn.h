#pragma once
/// \file
/// The reference and dynamically quantized recurrent modules: LSTM, GRU,
/// LSTMCell, GRUCell, RNNCell (torch.ao.nn.quantized.reference.X,
/// torch.ao.nn.quantized.dynamic.X). convert_to_reference gives a recurrent
/// module its weights' qparams, lower-to-native packs them for ATen's
/// quantized kernels.
///
/// \code
///   auto ref = qfx::nn::reference_rnn_from_float(gru, qconfig.weight);  // one observer per weight
///   auto q = qfx::nn::DynamicQuantizedRNNImpl::from_reference(*ref);
///   std::vector<c10::IValue> in{x};
///   c10::IValue out = q->forward(in);  // (output, h_n)
/// \endcode

#include "qfx/nn/clone.h"
#include "qfx/nn/reference.h"
#include "qfx/quant/qconfig.h"

#include <ATen/core/ivalue.h>
#include <torch/nn/module.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace qfx::nn {

/// True for the recurrent module types with a reference quantized module
/// here (`torch.nn.LSTM`, `torch.nn.GRU`, `torch.nn.LSTMCell`,
/// `torch.nn.GRUCell`, `torch.nn.RNNCell`).
bool has_reference_rnn(const std::string& float_type);

/// What a recurrent module's quantized forms need of it: its type, sizes
/// and flags, read from the LibTorch module.
struct RecurrentShape {
  std::string float_type;  ///< `torch.nn.GRU`
  int64_t input_size = 0, hidden_size = 0, num_layers = 1;
  bool bias = true, batch_first = false, bidirectional = false;
  double dropout = 0;
  bool relu = false;  ///< RNN or RNNCell with nonlinearity='relu'
  bool is_cell() const;
  bool is_lstm() const;  ///< LSTM or LSTMCell: the state is (h, c)
};

/// The shape of a LibTorch LSTM, GRU, RNN, LSTMCell, GRUCell or RNNCell.
RecurrentShape recurrent_shape(const torch::nn::Module& module);

/// PyTorch's reference recurrent module: the float module's parameters and
/// the qparams of each weight (`weight_ih_l0`, `weight_hh`, ...); its
/// forward is the float module's on the quantize-dequantized weights.
class ReferenceRNNImpl : public torch::nn::Module {
 public:
  ReferenceRNNImpl(std::shared_ptr<torch::nn::Module> float_module, std::map<std::string, WeightQParams> qparams);
  /// A deep copy (the float module and the qparams copied).
  ReferenceRNNImpl(const ReferenceRNNImpl& other, DeepCopy);
  /// The float module's forward (input and optional initial state).
  c10::IValue forward(std::vector<c10::IValue>& inputs);
  const RecurrentShape& shape() const { return shape_; }
  const std::shared_ptr<torch::nn::Module>& float_module() const { return float_; }
  /// The float module with the quantize-dequantized weights (what forward runs).
  const std::shared_ptr<torch::nn::Module>& dequantized() const { return dequantized_; }
  /// The weight `name` quantized with its qparams.
  at::Tensor quantized_weight(const std::string& name) const;

 private:
  std::shared_ptr<torch::nn::Module> float_;
  std::shared_ptr<torch::nn::Module> dequantized_;
  std::map<std::string, WeightQParams> qparams_;
  RecurrentShape shape_;
};

/// The reference module of `float_module`, each weight observed by a fresh
/// `weight` observer (PyTorch's nnqr.X.from_float with get_qparam_dict per
/// weight).
std::shared_ptr<ReferenceRNNImpl> reference_rnn_from_float(const std::shared_ptr<torch::nn::Module>& float_module,
                                                           const quant::ObserverSpec& weight);

/// PyTorch's dynamically quantized recurrent module. LSTM and GRU: per layer
/// and direction, the int8 weights prepacked with their biases into ATen's
/// cell params (`quantized::make_quantized_cell_params_dynamic`,
/// reduce_range), run by `aten::quantized_lstm` / `aten::quantized_gru`.
/// Cells: the two packed weights and the float biases, run by
/// `quantized::quantized_<lstm|gru|rnn_tanh|rnn_relu>_cell_dynamic`.
class DynamicQuantizedRNNImpl : public torch::nn::Module {
 public:
  /// `params`: the cell params (LSTM, GRU) or the two packed weights (cells).
  DynamicQuantizedRNNImpl(RecurrentShape shape, std::vector<c10::IValue> params, c10::IValue bias_ih,
                          c10::IValue bias_hh);
  /// A deep copy (the packed weights rebuilt from their state).
  DynamicQuantizedRNNImpl(const DynamicQuantizedRNNImpl& other, DeepCopy);
  /// PyTorch's from_reference.
  static std::shared_ptr<DynamicQuantizedRNNImpl> from_reference(const ReferenceRNNImpl& reference);
  /// `inputs`: input and optional initial state, as the float module takes them.
  c10::IValue forward(std::vector<c10::IValue>& inputs);
  const RecurrentShape& shape() const { return shape_; }
  /// LSTM, GRU: one `__torch__.torch.classes.rnn.CellParamsBase` per layer and
  /// direction, as the `List[CellParamsBase]` the ATen op takes.
  const c10::impl::GenericList& cell_params() const { return cell_params_; }
  /// Cells: the packed weight_ih and weight_hh; their float biases (or None).
  const std::vector<c10::IValue>& packed_weights() const { return packed_; }
  const c10::IValue& bias_ih() const { return bias_ih_; }
  const c10::IValue& bias_hh() const { return bias_hh_; }

 private:
  RecurrentShape shape_;
  c10::impl::GenericList cell_params_;
  std::vector<c10::IValue> packed_;
  c10::IValue bias_ih_, bias_hh_;
};

/// The ATen op of a dynamic cell: `quantized::quantized_gru_cell_dynamic`, ...
std::string dynamic_cell_op(const RecurrentShape& shape);

}  // namespace qfx::nn
