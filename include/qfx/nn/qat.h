#pragma once
/// \file
/// QAT modules (`torch.ao.nn.qat`, `torch.ao.nn.intrinsic.qat`): the float
/// computation with the weight fake-quantized by `weight_fake_quant` (the
/// qconfig's weight observer), trainable with LibTorch autograd. ConvBn*d
/// ConvBnReLU*d and LinearBn1d fold the batch norm into the weight the way
/// PyTorch's `_forward_approximate` does and keep training its statistics until
/// freeze_bn_stats().
///
/// \code
///   auto qat = qfx::nn::qat_from_float("torch.ao.nn.intrinsic.qat.ConvBnReLU2d", fused_conv_bn_relu, qconfig);
///   ... train ...
///   qfx::nn::ModulePtr float_module = qat->to_float();   // ConvReLU2d with the batch norm folded in
/// \endcode

#include "qfx/nn/clone.h"
#include "qfx/nn/float_modules.h"
#include "qfx/nn/intrinsic.h"
#include "qfx/quant/observer_base.h"
#include "qfx/quant/qconfig.h"

#include <torch/nn/module.h>

#include <memory>
#include <string>
#include <vector>

namespace qfx::nn {

/// What every QAT module shares (QatImpl below). Holds `weight` and `bias`
/// (shared with the float module it came from), `bn` for ConvBn kinds, and
/// `weight_fake_quant`.
class QatModuleImpl : public torch::nn::Module {
 public:
  /// `weighted`: the float Linear/Conv*d/Embedding whose op runs; `bn`: the
  /// batch norm of ConvBn kinds (else null); `relu`: apply relu last.
  QatModuleImpl(std::string type_name, ModulePtr weighted, ModulePtr bn, bool relu,
                std::shared_ptr<quant::ActivationPostProcess> weight_fake_quant, std::vector<std::string> source_types);
  /// A deep copy: float module, batch norm and fake quant copied, the
  /// weight still the float module's.
  QatModuleImpl(const QatModuleImpl& other, DeepCopy);

  at::Tensor forward(const at::Tensor& x);
  /// As PyTorch: a frozen batch norm keeps its mode (and so does the fake quant).
  void train(bool on = true) override;
  /// Stop / resume updating the batch norm's running statistics.
  void freeze_bn_stats();
  void update_bn_stats();
  bool bn_frozen() const { return freeze_bn_; }

  /// The float module for convert: Linear/Conv*d (batch norm folded in), or
  /// LinearReLU/ConvReLU*d around it.
  ModulePtr to_float() const;

  const std::string& type_name() const { return type_name_; }
  /// The module types it was made from (`torch.nn.Conv2d`, `torch.nn.BatchNorm2d`, `torch.nn.ReLU`).
  const std::vector<std::string>& source_types() const { return source_types_; }
  quant::ActivationPostProcess& weight_fake_quant() const { return *weight_fake_quant_; }
  /// The float module whose op this module runs (shares weight and bias).
  const ModulePtr& weighted() const { return weighted_; }

 private:
  at::Tensor forward_with_bn(const at::Tensor& x);

  std::string type_name_;
  ModulePtr weighted_;
  ModulePtr bn_;
  bool relu_;
  bool freeze_bn_ = false;
  std::shared_ptr<quant::ActivationPostProcess> weight_fake_quant_;
  std::vector<std::string> source_types_;
};

/// What a QAT class adds to its float module's op.
enum class QatFusion {
  kNone,    ///< torch.ao.nn.qat.Linear, Conv2d, Embedding, ...
  kReLU,    ///< intrinsic.qat.LinearReLU, ConvReLU2d, ...
  kBn,      ///< intrinsic.qat.ConvBn2d, LinearBn1d, ...
  kBnReLU,  ///< intrinsic.qat.ConvBnReLU2d, ...
};

/// The QAT class of float class `FloatImpl` with `Fusion`, as
/// `torch.ao.nn.qat` and `torch.ao.nn.intrinsic.qat` have one per pair
/// (`QatConvBnReLU2d` is `torch.ao.nn.intrinsic.qat.ConvBnReLU2d`).
template <typename FloatImpl, QatFusion Fusion>
class QatImpl final : public QatModuleImpl {
 public:
  using QatModuleImpl::QatModuleImpl;

  /// PyTorch's `from_float`: the QAT module for `float_module` (a
  /// `FloatImpl`, or the fused module of it with its batch norm and/or
  /// relu), sharing its parameters, its weight fake-quantized by
  /// `qconfig.weight`. c10::Error for another module.
  static std::shared_ptr<QatImpl> from_float(const ModulePtr& float_module, const quant::QConfig& qconfig);

  std::shared_ptr<torch::nn::Module> clone(const c10::optional<torch::Device>& device = c10::nullopt) const override {
    return clone_through<QatImpl>(static_cast<const QatModuleImpl&>(*this), device);
  }
};

using QatLinearImpl = QatImpl<torch::nn::LinearImpl, QatFusion::kNone>;
using QatConv1dImpl = QatImpl<torch::nn::Conv1dImpl, QatFusion::kNone>;
using QatConv2dImpl = QatImpl<torch::nn::Conv2dImpl, QatFusion::kNone>;
using QatConv3dImpl = QatImpl<torch::nn::Conv3dImpl, QatFusion::kNone>;
using QatEmbeddingImpl = QatImpl<torch::nn::EmbeddingImpl, QatFusion::kNone>;
using QatEmbeddingBagImpl = QatImpl<torch::nn::EmbeddingBagImpl, QatFusion::kNone>;
using QatLinearReLUImpl = QatImpl<torch::nn::LinearImpl, QatFusion::kReLU>;
using QatConvReLU1dImpl = QatImpl<torch::nn::Conv1dImpl, QatFusion::kReLU>;
using QatConvReLU2dImpl = QatImpl<torch::nn::Conv2dImpl, QatFusion::kReLU>;
using QatConvReLU3dImpl = QatImpl<torch::nn::Conv3dImpl, QatFusion::kReLU>;
using QatConvBn1dImpl = QatImpl<torch::nn::Conv1dImpl, QatFusion::kBn>;
using QatConvBn2dImpl = QatImpl<torch::nn::Conv2dImpl, QatFusion::kBn>;
using QatConvBn3dImpl = QatImpl<torch::nn::Conv3dImpl, QatFusion::kBn>;
using QatConvBnReLU1dImpl = QatImpl<torch::nn::Conv1dImpl, QatFusion::kBnReLU>;
using QatConvBnReLU2dImpl = QatImpl<torch::nn::Conv2dImpl, QatFusion::kBnReLU>;
using QatConvBnReLU3dImpl = QatImpl<torch::nn::Conv3dImpl, QatFusion::kBnReLU>;
using QatLinearBn1dImpl = QatImpl<torch::nn::LinearImpl, QatFusion::kBn>;
TORCH_MODULE(QatLinear);
TORCH_MODULE(QatConv1d);
TORCH_MODULE(QatConv2d);
TORCH_MODULE(QatConv3d);
TORCH_MODULE(QatEmbedding);
TORCH_MODULE(QatEmbeddingBag);
TORCH_MODULE(QatLinearReLU);
TORCH_MODULE(QatConvReLU1d);
TORCH_MODULE(QatConvReLU2d);
TORCH_MODULE(QatConvReLU3d);
TORCH_MODULE(QatConvBn1d);
TORCH_MODULE(QatConvBn2d);
TORCH_MODULE(QatConvBn3d);
TORCH_MODULE(QatConvBnReLU1d);
TORCH_MODULE(QatConvBnReLU2d);
TORCH_MODULE(QatConvBnReLU3d);
TORCH_MODULE(QatLinearBn1d);

/// PyTorch's `from_float`: the QAT module of class `qat_type` for a float
/// module (Linear, Conv*d, Embedding, EmbeddingBag) or a fused one
/// (LinearReLU, ConvReLU*d, ConvBn*d, ConvBnReLU*d, LinearBn1d), sharing its parameters;
/// its weight fake-quantized by `qconfig.weight`. c10::Error for other pairs.
std::shared_ptr<QatModuleImpl> qat_from_float(const std::string& qat_type, const ModulePtr& float_module,
                                              const quant::QConfig& qconfig);

/// The QAT module classes qfx has, sorted.
std::vector<std::string> qat_module_types();

}  // namespace qfx::nn
