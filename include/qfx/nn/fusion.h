#pragma once
/// \file
/// Folding batch norm into the conv or linear before it (PyTorch's
/// `torch.nn.utils.fusion`, bit for bit), and the fuser methods of
/// `torch.ao.quantization.fuser_method_mappings` built on it. For post-training
/// quantization the BN is folded; for QAT the modules are kept side by side in
/// a ConvBn* / LinearBn1d module, whose QAT version folds BN while training.
///
/// The fuser methods are registered with backend::BackendRegistry under
/// PyTorch's names: `fuse_conv_bn`, `fuse_conv_bn_relu`, `fuse_linear_bn`,
/// `fuse_convtranspose_bn`, and onednn's `_fuse_conv_add_left`, ...,
/// `_fuse_linear_bn_leaky_relu`.

#include "qfx/nn/intrinsic.h"

#include <ATen/core/Tensor.h>

#include <utility>

namespace qfx::nn {

/// PyTorch's fuse_conv_bn_weights: the conv weight scaled per output channel
/// by bn_w / sqrt(bn_rv + eps), and the bias shifted accordingly. Undefined
/// `conv_b`, `bn_w` or `bn_b` count as zeros, ones and zeros. `transpose`
/// scales dimension 1 (ConvTranspose weights are [in, out, ...]).
std::pair<at::Tensor, at::Tensor> fuse_conv_bn_weights(const at::Tensor& conv_w, const at::Tensor& conv_b,
                                                       const at::Tensor& bn_rm, const at::Tensor& bn_rv, double bn_eps,
                                                       const at::Tensor& bn_w, const at::Tensor& bn_b,
                                                       bool transpose = false);

/// PyTorch's fuse_linear_bn_weights.
std::pair<at::Tensor, at::Tensor> fuse_linear_bn_weights(const at::Tensor& linear_w, const at::Tensor& linear_b,
                                                         const at::Tensor& bn_rm, const at::Tensor& bn_rv,
                                                         double bn_eps, const at::Tensor& bn_w, const at::Tensor& bn_b);

/// A BatchNorm1d/2d/3d's statistics, parameters and options.
struct BatchNormState {
  at::Tensor running_mean, running_var, weight, bias;
  double eps = 0;
  int64_t num_features = 0;
  bool affine = false, track_running_stats = false;
};
/// The state of `bn`; c10::Error unless it is a BatchNorm with running statistics.
BatchNormState batch_norm_state(const torch::nn::Module& bn);

/// A new Conv*d / ConvTranspose*d with `bn` folded in; the inputs are not
/// changed. Both must be in eval mode.
ModulePtr fuse_conv_bn_eval(const torch::nn::Module& conv, const torch::nn::Module& bn, bool transpose = false);
/// As fuse_conv_bn_eval, whatever the modes (QAT's to_float folds a
/// training-mode BatchNorm's running statistics).
ModulePtr fold_conv_bn(const torch::nn::Module& conv, const torch::nn::Module& bn, bool transpose = false);

/// A new Linear with `bn` (BatchNorm1d) folded in. Both must be in eval mode.
ModulePtr fuse_linear_bn_eval(const torch::nn::Module& linear, const torch::nn::Module& bn);
/// As fuse_linear_bn_eval, whatever the modes.
ModulePtr fold_linear_bn(const torch::nn::Module& linear, const torch::nn::Module& bn);

/// conv + bn: ConvBn*d for QAT, else the folded conv.
ModulePtr fuse_conv_bn(bool is_qat, const ModulePtr& conv, const ModulePtr& bn);
/// conv + bn + relu: ConvBnReLU*d for QAT, else ConvReLU*d of the folded conv.
ModulePtr fuse_conv_bn_relu(bool is_qat, const ModulePtr& conv, const ModulePtr& bn, const ModulePtr& relu);
/// linear + bn: LinearBn1d for QAT, else the folded linear.
ModulePtr fuse_linear_bn(bool is_qat, const ModulePtr& linear, const ModulePtr& bn);
/// conv transpose + bn: the folded conv transpose (QAT is not supported, as in PyTorch).
ModulePtr fuse_convtranspose_bn(bool is_qat, const ModulePtr& convt, const ModulePtr& bn);

}  // namespace qfx::nn
