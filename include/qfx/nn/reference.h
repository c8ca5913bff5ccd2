#pragma once
/// \file
/// Reference quantized modules (`torch.ao.nn.quantized.reference`): the float
/// module's computation with its weight quantized and dequantized with
/// stored qparams, so a reference model computes what the quantized kernels
/// approximate. Linear, Conv1d/2d/3d, ConvTranspose1d/2d/3d, Embedding and
/// EmbeddingBag.
///
/// \code
///   auto observer = qconfig.weight.make();
///   observer->forward(linear->weight);
///   auto ref = qfx::nn::reference_from_float(linear, qfx::nn::weight_qparams_of(*observer));
///   ref->name();  // "QuantizedLinear(Reference)" in print(gm)
/// \endcode

#include "qfx/nn/clone.h"
#include "qfx/quant/observer_base.h"

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <memory>
#include <string>
#include <vector>

namespace qfx::nn {

/// PyTorch's get_qparam_dict: a weight observer's dtype, qscheme (symmetric
/// schemes as affine, since quantized tensors have no symmetric scheme),
/// scale, zero point and channel axis.
struct WeightQParams {
  c10::ScalarType dtype = c10::kQUInt8;
  c10::QScheme qscheme = c10::kPerTensorAffine;
  at::Tensor scale;
  at::Tensor zero_point;
  int64_t axis = 0;
};
WeightQParams weight_qparams_of(quant::ActivationPostProcess& observer);
/// A copy with scale and zero point tensors of its own.
WeightQParams deep_copy_of(const WeightQParams& qparams);

/// Quantizes `weight` with `qparams` (PyTorch's _quantize_weight); float16
/// converts to half.
at::Tensor quantize_weight(const at::Tensor& weight, const WeightQParams& qparams);

/// Quantizes and dequantizes `weight` with `qparams` (PyTorch's
/// _quantize_and_dequantize_weight); float16 rounds through half.
at::Tensor quantize_dequantize_weight(const at::Tensor& weight, const WeightQParams& qparams);

/// A reference quantized module around a float Linear, ConvNd,
/// ConvTransposeNd, Embedding or EmbeddingBag. Registers `weight`, `bias` (the float module's tensors),
/// and the buffers `weight_scale`, `weight_zero_point`, `weight_axis`.
class ReferenceModuleImpl : public torch::nn::Module {
 public:
  ReferenceModuleImpl(std::shared_ptr<torch::nn::Module> float_module, WeightQParams qparams);
  /// A deep copy (the float module and the qparams copied).
  ReferenceModuleImpl(const ReferenceModuleImpl& other, DeepCopy);
  /// `extra`: EmbeddingBag's offsets and per-sample weights (undefined: none).
  at::Tensor forward(const at::Tensor& x, const std::vector<at::Tensor>& extra = {});
  /// The weight as the quantized kernels see it (quantize-dequantize).
  at::Tensor weight_dequantized() const;
  /// The weight quantized with the stored qparams (get_quantized_weight).
  at::Tensor quantized_weight() const;
  const WeightQParams& qparams() const { return qparams_; }
  /// The float module (same weight and bias tensors).
  const std::shared_ptr<torch::nn::Module>& float_module() const { return float_; }
  /// PyTorch's type name, e.g. `torch.ao.nn.quantized.reference.Conv2d`.
  const std::string& type_name() const { return type_name_; }

 private:
  std::shared_ptr<torch::nn::Module> float_;
  WeightQParams qparams_;
  std::string type_name_;
};

/// True when float modules of `float_type` (`torch.nn.Conv2d`) have a
/// reference quantized module.
bool has_reference_module(const std::string& float_type);

/// The reference module for a float module (`from_float`); c10::Error if
/// there is no reference module for its type.
std::shared_ptr<ReferenceModuleImpl> reference_from_float(std::shared_ptr<torch::nn::Module> float_module,
                                                          const WeightQParams& qparams);

}  // namespace qfx::nn
