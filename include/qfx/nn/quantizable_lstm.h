#pragma once
/// \file
/// The statically quantized LSTM of PyTorch's custom module flow:
/// `torch.nn.LSTM` -> `torch.ao.nn.quantizable.LSTM` (prepare: the LSTM
/// decomposed into per-cell Linear layers and element-wise ops, each output
/// observed) -> `torch.ao.nn.quantized.LSTM` (convert: quantized Linear,
/// quantized add/mul and the fixed-qparams sigmoid/tanh kernels on quint8
/// tensors). Both classes are registered as custom module classes under
/// those names, so a PrepareCustomConfig mapping
/// `{"static": {"torch.nn.LSTM": "torch.ao.nn.quantizable.LSTM"}}` and a
/// ConvertCustomConfig mapping `{"static": {"torch.ao.nn.quantizable.LSTM":
/// "torch.ao.nn.quantized.LSTM"}}` select them, as in PyTorch 1.13.
///
/// \code
///   auto observed = qfx::nn::QuantizableLSTMImpl::from_float(lstm, qconfig);
///   observed->forward(inputs);                       // calibration, float
///   auto q = qfx::nn::QuantizedLSTMImpl::from_observed(*observed);
///   c10::IValue out = q->forward(quantized_inputs);  // (output, (h_n, c_n)), quint8
/// \endcode

#include "qfx/nn/clone.h"
#include "qfx/nn/quantized_rnn.h"
#include "qfx/quant/qconfig.h"

#include <ATen/core/ivalue.h>
#include <torch/nn/module.h>

#include <memory>
#include <string>
#include <vector>

namespace qfx::nn {

/// `torch.ao.quantization.DeQuantStub`: prepare places one after each
/// output of a custom module LSTM (its outputs are quantized already);
/// the identity in float, a `dequantize` node after convert.
class DeQuantStubImpl : public torch::nn::Module {
 public:
  DeQuantStubImpl() : torch::nn::Module("DeQuantStub") {}
  std::shared_ptr<torch::nn::Module> clone(const c10::optional<torch::Device>& device = c10::nullopt) const override;
};

/// The observed parts of one QuantizableLSTMCell: the input and hidden
/// Linear layers and the observers PyTorch's eager `prepare` gives the cell
/// (on the outputs of igates, hgates and of the FloatFunctionals gates,
/// fgate_cx, igate_cgate, fgate_cx_igate_cgate, ogate_cy).
struct ObservedLSTMCell {
  std::shared_ptr<torch::nn::Module> igates, hgates;  ///< torch.nn.Linear
  /// In the order above: igates, hgates, gates, fgate_cx, igate_cgate,
  /// fgate_cx_igate_cgate, ogate_cy.
  std::vector<std::shared_ptr<quant::ActivationPostProcess>> observers;
};

/// The names of ObservedLSTMCell::observers, as PyTorch's cell names its parts.
const std::vector<std::string>& lstm_cell_part_names();

/// `torch.ao.nn.quantizable.LSTM`: a float LSTM that computes its cells
/// from their parts and observes each part's output.
class QuantizableLSTMImpl : public torch::nn::Module {
 public:
  QuantizableLSTMImpl(RecurrentShape shape, std::vector<ObservedLSTMCell> cells, quant::QConfig qconfig);
  /// A deep copy: Linear layers and observers copied.
  QuantizableLSTMImpl(const QuantizableLSTMImpl& other, DeepCopy);
  std::shared_ptr<torch::nn::Module> clone(const c10::optional<torch::Device>& device = c10::nullopt) const override;
  /// PyTorch's from_float: the float LSTM's weights per layer and direction,
  /// fresh activation observers from `qconfig`.
  static std::shared_ptr<QuantizableLSTMImpl> from_float(const torch::nn::Module& lstm, const quant::QConfig& qconfig);
  /// `inputs`: input and optional `(h_0, c_0)`; returns (output, (h_n, c_n)).
  c10::IValue forward(std::vector<c10::IValue>& inputs);
  const RecurrentShape& shape() const { return shape_; }
  /// One per layer and direction: layer 0 forward, layer 0 reverse, layer 1 ...
  const std::vector<ObservedLSTMCell>& cells() const { return cells_; }
  const quant::QConfig& qconfig() const { return qconfig_; }

 private:
  RecurrentShape shape_;
  std::vector<ObservedLSTMCell> cells_;
  quant::QConfig qconfig_;
};

/// One cell of `torch.ao.nn.quantized.LSTM`: two quantized Linear modules
/// and the output qparams of its quantized add/mul ops.
struct QuantizedLSTMCell {
  std::shared_ptr<torch::nn::Module> igates, hgates;  ///< torch.ao.nn.quantized.Linear
  /// gates, fgate_cx, igate_cgate, fgate_cx_igate_cgate, ogate_cy.
  std::vector<double> scales;
  std::vector<int64_t> zero_points;
};

/// `torch.ao.nn.quantized.LSTM`: runs on quint8 input and state and returns
/// quint8 output and state, with ATen's quantized kernels.
class QuantizedLSTMImpl : public torch::nn::Module {
 public:
  QuantizedLSTMImpl(RecurrentShape shape, std::vector<QuantizedLSTMCell> cells);
  /// A deep copy: the quantized Linear layers copied.
  QuantizedLSTMImpl(const QuantizedLSTMImpl& other, DeepCopy);
  std::shared_ptr<torch::nn::Module> clone(const c10::optional<torch::Device>& device = c10::nullopt) const override;
  /// PyTorch's from_observed (eager convert of the observed module): each
  /// Linear's weight quantized by a fresh `qconfig.weight` observer.
  static std::shared_ptr<QuantizedLSTMImpl> from_observed(const QuantizableLSTMImpl& observed);
  c10::IValue forward(std::vector<c10::IValue>& inputs);
  const RecurrentShape& shape() const { return shape_; }
  const std::vector<QuantizedLSTMCell>& cells() const { return cells_; }

 private:
  RecurrentShape shape_;
  std::vector<QuantizedLSTMCell> cells_;
};

}  // namespace qfx::nn
