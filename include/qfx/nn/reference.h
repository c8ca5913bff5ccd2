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
#include "qfx/nn/float_modules.h"
#include "qfx/quant/observer_base.h"

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

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

/// What every reference quantized module shares (ReferenceImpl below): a
/// float Linear, ConvNd, ConvTransposeNd, Embedding or EmbeddingBag whose
/// op it runs. Registers `weight`, `bias` (the float module's tensors), and
/// the buffers `weight_scale`, `weight_zero_point`, `weight_axis`.
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

/// The reference module class of float class `FloatImpl`, as
/// `torch.ao.nn.quantized.reference` has one per float class
/// (`ReferenceConv2d` is `torch.ao.nn.quantized.reference.Conv2d`).
template <typename FloatImpl>
class ReferenceImpl final : public ReferenceModuleImpl {
 public:
  ReferenceImpl(std::shared_ptr<FloatImpl> float_module, WeightQParams qparams);
  ReferenceImpl(const ReferenceModuleImpl& other, DeepCopy tag) : ReferenceModuleImpl(other, tag) {}

  /// PyTorch's from_float: `float_module` with its weight quantized and
  /// dequantized with `qparams` (PyTorch takes them from the qconfig's
  /// weight observer after it has seen the weight: weight_qparams_of).
  static std::shared_ptr<ReferenceImpl> from_float(std::shared_ptr<FloatImpl> float_module,
                                                   const WeightQParams& qparams) {
    return std::make_shared<ReferenceImpl>(std::move(float_module), qparams);
  }

  std::shared_ptr<torch::nn::Module> clone(const c10::optional<torch::Device>& device = c10::nullopt) const override {
    return clone_through<ReferenceImpl>(static_cast<const ReferenceModuleImpl&>(*this), device);
  }
};

using ReferenceLinearImpl = ReferenceImpl<torch::nn::LinearImpl>;
using ReferenceConv1dImpl = ReferenceImpl<torch::nn::Conv1dImpl>;
using ReferenceConv2dImpl = ReferenceImpl<torch::nn::Conv2dImpl>;
using ReferenceConv3dImpl = ReferenceImpl<torch::nn::Conv3dImpl>;
using ReferenceConvTranspose1dImpl = ReferenceImpl<torch::nn::ConvTranspose1dImpl>;
using ReferenceConvTranspose2dImpl = ReferenceImpl<torch::nn::ConvTranspose2dImpl>;
using ReferenceConvTranspose3dImpl = ReferenceImpl<torch::nn::ConvTranspose3dImpl>;
using ReferenceEmbeddingImpl = ReferenceImpl<torch::nn::EmbeddingImpl>;
using ReferenceEmbeddingBagImpl = ReferenceImpl<torch::nn::EmbeddingBagImpl>;
TORCH_MODULE(ReferenceLinear);
TORCH_MODULE(ReferenceConv1d);
TORCH_MODULE(ReferenceConv2d);
TORCH_MODULE(ReferenceConv3d);
TORCH_MODULE(ReferenceConvTranspose1d);
TORCH_MODULE(ReferenceConvTranspose2d);
TORCH_MODULE(ReferenceConvTranspose3d);
TORCH_MODULE(ReferenceEmbedding);
TORCH_MODULE(ReferenceEmbeddingBag);

/// True when float modules of `float_type` (`torch.nn.Conv2d`) have a
/// reference quantized module.
bool has_reference_module(const std::string& float_type);

/// The reference module for a float module of any reference class (its
/// ReferenceImpl's from_float); c10::Error if its type has none.
std::shared_ptr<ReferenceModuleImpl> reference_from_float(std::shared_ptr<torch::nn::Module> float_module,
                                                          const WeightQParams& qparams);

}  // namespace qfx::nn
