// QAT modules: fake-quantized weights on the float ops, BN folding for
// ConvBn kinds, registered under torch.ao.nn.qat / torch.ao.nn.intrinsic.qat.

#include "qfx/nn/qat.h"

#include "module_kinds.h"
#include "own_tensors.h"
#include "weighted_forward.h"

#include "qfx/nn/fusion.h"

#include <ATen/ATen.h>
#include <typeindex>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

namespace qfx::nn {
namespace {

/// A QAT class: its PyTorch name, the float module types it is made from
/// (the weighted part first), whether it has a batch norm and a relu, and
/// its C++ class.
struct QatType {
  const char* type_name;
  std::vector<const char*> parts;
  bool bn;
  bool relu;
  std::type_index type;
  /// A new module of the class from its constructor's arguments.
  std::shared_ptr<QatModuleImpl> (*make)(std::string, ModulePtr, ModulePtr, bool,
                                         std::shared_ptr<quant::ActivationPostProcess>, std::vector<std::string>);
};

template <typename FloatImpl, QatFusion Fusion>
QatType row(const char* type_name, std::vector<const char*> parts) {
  auto make = [](std::string name, ModulePtr weighted, ModulePtr bn, bool relu,
                 std::shared_ptr<quant::ActivationPostProcess> fq,
                 std::vector<std::string> sources) -> std::shared_ptr<QatModuleImpl> {
    return std::make_shared<QatImpl<FloatImpl, Fusion>>(std::move(name), std::move(weighted), std::move(bn), relu,
                                                        std::move(fq), std::move(sources));
  };
  bool bn = Fusion == QatFusion::kBn || Fusion == QatFusion::kBnReLU;
  bool relu = Fusion == QatFusion::kReLU || Fusion == QatFusion::kBnReLU;
  return {type_name, std::move(parts), bn, relu, typeid(QatImpl<FloatImpl, Fusion>), make};
}

const std::vector<QatType>& qat_types() {
  using namespace torch::nn;
  using F = QatFusion;
  static const std::vector<QatType> kTypes = {
      row<LinearImpl, F::kNone>("torch.ao.nn.qat.Linear", {"torch.nn.Linear"}),
      row<Conv1dImpl, F::kNone>("torch.ao.nn.qat.Conv1d", {"torch.nn.Conv1d"}),
      row<Conv2dImpl, F::kNone>("torch.ao.nn.qat.Conv2d", {"torch.nn.Conv2d"}),
      row<Conv3dImpl, F::kNone>("torch.ao.nn.qat.Conv3d", {"torch.nn.Conv3d"}),
      row<EmbeddingImpl, F::kNone>("torch.ao.nn.qat.Embedding", {"torch.nn.Embedding"}),
      row<EmbeddingBagImpl, F::kNone>("torch.ao.nn.qat.EmbeddingBag", {"torch.nn.EmbeddingBag"}),
      row<LinearImpl, F::kReLU>("torch.ao.nn.intrinsic.qat.LinearReLU", {"torch.nn.Linear", "torch.nn.ReLU"}),
      row<Conv1dImpl, F::kReLU>("torch.ao.nn.intrinsic.qat.ConvReLU1d", {"torch.nn.Conv1d", "torch.nn.ReLU"}),
      row<Conv2dImpl, F::kReLU>("torch.ao.nn.intrinsic.qat.ConvReLU2d", {"torch.nn.Conv2d", "torch.nn.ReLU"}),
      row<Conv3dImpl, F::kReLU>("torch.ao.nn.intrinsic.qat.ConvReLU3d", {"torch.nn.Conv3d", "torch.nn.ReLU"}),
      row<Conv1dImpl, F::kBn>("torch.ao.nn.intrinsic.qat.ConvBn1d", {"torch.nn.Conv1d", "torch.nn.BatchNorm1d"}),
      row<Conv2dImpl, F::kBn>("torch.ao.nn.intrinsic.qat.ConvBn2d", {"torch.nn.Conv2d", "torch.nn.BatchNorm2d"}),
      row<Conv3dImpl, F::kBn>("torch.ao.nn.intrinsic.qat.ConvBn3d", {"torch.nn.Conv3d", "torch.nn.BatchNorm3d"}),
      row<Conv1dImpl, F::kBnReLU>("torch.ao.nn.intrinsic.qat.ConvBnReLU1d",
                                  {"torch.nn.Conv1d", "torch.nn.BatchNorm1d", "torch.nn.ReLU"}),
      row<Conv2dImpl, F::kBnReLU>("torch.ao.nn.intrinsic.qat.ConvBnReLU2d",
                                  {"torch.nn.Conv2d", "torch.nn.BatchNorm2d", "torch.nn.ReLU"}),
      row<Conv3dImpl, F::kBnReLU>("torch.ao.nn.intrinsic.qat.ConvBnReLU3d",
                                  {"torch.nn.Conv3d", "torch.nn.BatchNorm3d", "torch.nn.ReLU"}),
      row<LinearImpl, F::kBn>("torch.ao.nn.intrinsic.qat.LinearBn1d", {"torch.nn.Linear", "torch.nn.BatchNorm1d"}),
  };
  return kTypes;
}

c10::IValue qat_forward(torch::nn::Module& m, std::vector<c10::IValue>& in) {
  auto& qat = dynamic_cast<QatModuleImpl&>(m);
  TORCH_CHECK(in.size() == 1 && in[0].isTensor(), qat.type_name(), " takes one tensor input");
  return qat.forward(in[0].toTensor());
}

/// PyTorch's from_float for the class `t`.
std::shared_ptr<QatModuleImpl> qat_of_type(const QatType& t, const ModulePtr& float_module,
                                           const quant::QConfig& qconfig) {
  std::vector<ModulePtr> parts = {float_module};
  if (auto* fused = dynamic_cast<const FusedModuleImpl*>(float_module.get())) parts = fused->modules();
  std::vector<std::string> sources;
  for (const ModulePtr& p : parts) sources.push_back(ir::module_type_name(*p));
  TORCH_CHECK(sources == std::vector<std::string>(t.parts.begin(), t.parts.end()), t.type_name, ".from_float: expects ",
              t.parts[0], (t.parts.size() > 1 ? " (fused)" : ""), ", got ", ir::module_type_name(*float_module));
  std::shared_ptr<quant::ActivationPostProcess> fq = qconfig.weight.make();
  auto qat = t.make(t.type_name, parts[0], t.bn ? parts[1] : nullptr, t.relu, fq, sources);
  qat->train(float_module->is_training());
  return qat;
}

}  // namespace

void register_qat_kinds() {
  auto extra_repr = [](const torch::nn::Module& m) {
    const auto& qat = detail::as<QatModuleImpl>(m);
    const ir::ModuleKind* kind = ir::ModuleRegistry::instance().find(*qat.weighted());
    return kind && kind->extra_repr ? kind->extra_repr(*qat.weighted()) : std::string();
  };
  for (const QatType& t : qat_types()) {
    std::string name = t.type_name;
    ir::ModuleRegistry::instance().add({name, t.type, &qat_forward, extra_repr, name.substr(name.rfind('.') + 1)});
  }
}

namespace {

int64_t out_channels(const at::Tensor& weight) { return weight.size(0); }

}  // namespace

QatModuleImpl::QatModuleImpl(std::string type_name, ModulePtr weighted, ModulePtr bn, bool relu,
                             std::shared_ptr<quant::ActivationPostProcess> weight_fake_quant,
                             std::vector<std::string> source_types)
    : type_name_(std::move(type_name)),
      weighted_(std::move(weighted)),
      bn_(std::move(bn)),
      relu_(relu),
      weight_fake_quant_(std::move(weight_fake_quant)),
      source_types_(std::move(source_types)) {
  for (const auto& p : weighted_->named_parameters(false)) register_parameter(p.key(), p.value());
  if (bn_) register_module("bn", bn_);
  register_module("weight_fake_quant", std::dynamic_pointer_cast<torch::nn::Module>(weight_fake_quant_));
  torch::nn::Module::train(weighted_->is_training());
}

QatModuleImpl::QatModuleImpl(const QatModuleImpl& other, DeepCopy)
    : QatModuleImpl(other.type_name_, other.weighted_->clone(), deep_copy_of(other.bn_), other.relu_,
                    deep_copy_of(other.weight_fake_quant_), other.source_types_) {
  freeze_bn_ = other.freeze_bn_;
  weighted_->train(other.weighted_->is_training());
  copy_training_modes(other, *this);
}

void QatModuleImpl::train(bool on) {
  if (!freeze_bn_) {
    torch::nn::Module::train(on);
    weighted_->train(on);
    return;
  }
  std::vector<std::pair<std::shared_ptr<torch::nn::Module>, bool>> modes;
  for (const auto& child : children()) modes.emplace_back(child, child->is_training());
  torch::nn::Module::train(on);
  for (auto& [child, mode] : modes) child->train(mode);
}

void QatModuleImpl::freeze_bn_stats() {
  freeze_bn_ = true;
  if (bn_) bn_->train(false);
}

void QatModuleImpl::update_bn_stats() {
  freeze_bn_ = false;
  if (bn_) bn_->train(true);
}

at::Tensor QatModuleImpl::forward(const at::Tensor& x) {
  at::Tensor y = bn_ ? forward_with_bn(x)
                     : detail::weighted_forward(*weighted_, x,
                                                weight_fake_quant_->forward(detail::own_parameter(*this, "weight")));
  return relu_ ? at::relu(y) : y;
}

at::Tensor QatModuleImpl::forward_with_bn(const at::Tensor& x) {
  // PyTorch's _ConvBnNd._forward_approximate
  at::Tensor weight = detail::own_parameter(*this, "weight");
  at::Tensor bias = detail::own_parameter(*this, "bias");
  BatchNormState bn = batch_norm_state(*bn_);
  at::Tensor running_std = at::sqrt(bn.running_var + bn.eps);
  at::Tensor scale_factor = bn.weight / running_std;
  std::vector<int64_t> weight_shape(weight.dim(), 1), bias_shape(weight.dim(), 1);
  weight_shape[0] = -1;
  bias_shape[1] = -1;
  at::Tensor scaled_weight = weight_fake_quant_->forward(weight * scale_factor.reshape(weight_shape));
  at::Tensor zero_bias = bias.defined() ? at::zeros_like(bias, x.dtype())
                                        : at::zeros({out_channels(weight)}, scaled_weight.options().dtype(x.dtype()));
  at::Tensor conv = detail::weighted_forward_with_bias(*weighted_, x, scaled_weight, zero_bias);
  at::Tensor conv_orig = conv / scale_factor.reshape(bias_shape);
  if (bias.defined()) conv_orig = conv_orig + bias.reshape(bias_shape);
  std::vector<c10::IValue> in = {conv_orig};
  const ir::ModuleKind* kind = ir::ModuleRegistry::instance().find(*bn_);
  return kind->forward(*bn_, in).toTensor();
}

ModulePtr QatModuleImpl::to_float() const {
  torch::NoGradGuard no_grad;
  bool linear = dynamic_cast<const torch::nn::LinearImpl*>(weighted_.get()) != nullptr;
  ModulePtr conv = !bn_     ? weighted_->clone()
                   : linear ? fold_linear_bn(*weighted_, *bn_)
                            : fold_conv_bn(*weighted_, *bn_);
  conv->train(is_training());
  if (!relu_) return conv;
  auto relu = std::make_shared<torch::nn::ReLUImpl>();
  FusedKind kind = linear                                                    ? FusedKind::kLinearReLU
                   : weighted_->named_parameters(false)["weight"].dim() == 3 ? FusedKind::kConvReLU1d
                   : weighted_->named_parameters(false)["weight"].dim() == 4 ? FusedKind::kConvReLU2d
                                                                             : FusedKind::kConvReLU3d;
  ModulePtr fused = make_fused_module(kind, {conv, relu});
  fused->train(is_training());
  return fused;
}

template <typename FloatImpl, QatFusion Fusion>
std::shared_ptr<QatImpl<FloatImpl, Fusion>> QatImpl<FloatImpl, Fusion>::from_float(const ModulePtr& float_module,
                                                                                   const quant::QConfig& qconfig) {
  for (const QatType& t : qat_types()) {
    if (t.type == typeid(QatImpl)) {
      return std::static_pointer_cast<QatImpl>(qat_of_type(t, float_module, qconfig));
    }
  }
  TORCH_CHECK(false, "no QAT class row for ", typeid(QatImpl).name());
}

template class QatImpl<torch::nn::LinearImpl, QatFusion::kNone>;
template class QatImpl<torch::nn::Conv1dImpl, QatFusion::kNone>;
template class QatImpl<torch::nn::Conv2dImpl, QatFusion::kNone>;
template class QatImpl<torch::nn::Conv3dImpl, QatFusion::kNone>;
template class QatImpl<torch::nn::EmbeddingImpl, QatFusion::kNone>;
template class QatImpl<torch::nn::EmbeddingBagImpl, QatFusion::kNone>;
template class QatImpl<torch::nn::LinearImpl, QatFusion::kReLU>;
template class QatImpl<torch::nn::Conv1dImpl, QatFusion::kReLU>;
template class QatImpl<torch::nn::Conv2dImpl, QatFusion::kReLU>;
template class QatImpl<torch::nn::Conv3dImpl, QatFusion::kReLU>;
template class QatImpl<torch::nn::Conv1dImpl, QatFusion::kBn>;
template class QatImpl<torch::nn::Conv2dImpl, QatFusion::kBn>;
template class QatImpl<torch::nn::Conv3dImpl, QatFusion::kBn>;
template class QatImpl<torch::nn::Conv1dImpl, QatFusion::kBnReLU>;
template class QatImpl<torch::nn::Conv2dImpl, QatFusion::kBnReLU>;
template class QatImpl<torch::nn::Conv3dImpl, QatFusion::kBnReLU>;
template class QatImpl<torch::nn::LinearImpl, QatFusion::kBn>;

std::shared_ptr<QatModuleImpl> qat_from_float(const std::string& qat_type, const ModulePtr& float_module,
                                              const quant::QConfig& qconfig) {
  for (const QatType& t : qat_types()) {
    if (qat_type == t.type_name) return qat_of_type(t, float_module, qconfig);
  }
  TORCH_CHECK(false, "no QAT module class ", qat_type);
}

std::vector<std::string> qat_module_types() {
  std::vector<std::string> names;
  for (const QatType& t : qat_types()) names.push_back(t.type_name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace qfx::nn
