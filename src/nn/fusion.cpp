// Batch-norm folding with PyTorch's exact arithmetic (same ATen ops in the
// same order), and the fuser methods of fuser_method_mappings.py with their
// checks and messages.

#include "qfx/nn/fusion.h"

#include "fold_loops.h"
#include "qfx/ir/module_registry.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/util/Exception.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <mutex>

namespace qfx::nn {
namespace {

/// What folding reads from a batch norm.
template <typename Impl>
bool read_bn(const torch::nn::Module& m, BatchNormState& out) {
  const auto* bn = dynamic_cast<const Impl*>(&m);
  if (bn == nullptr) return false;
  out = {bn->running_mean,     bn->running_var,
         bn->weight,           bn->bias,
         bn->options.eps(),    bn->options.num_features(),
         bn->options.affine(), bn->options.track_running_stats()};
  return true;
}

/// The options of a small module of the same kind: constructing a LibTorch
/// module draws random initial weights, which fusion throws away; for large
/// convs that costs more than the folding itself.
template <size_t D>
torch::nn::ConvOptions<D> small(torch::nn::ConvOptions<D> o) {
  return o.in_channels(o.groups()).out_channels(o.groups());
}
template <size_t D>
torch::nn::ConvTransposeOptions<D> small(torch::nn::ConvTransposeOptions<D> o) {
  return o.in_channels(o.groups()).out_channels(o.groups());
}
inline torch::nn::LinearOptions small(torch::nn::LinearOptions o) { return o.in_features(1).out_features(1); }

/// Gives a module built from small() options its real sizes back.
template <size_t D, typename Options>
void restore_sizes(torch::nn::detail::ConvNdOptions<D>& o, const Options& real) {
  o.in_channels(real.in_channels()).out_channels(real.out_channels());
}
inline void restore_sizes(torch::nn::LinearOptions& o, const torch::nn::LinearOptions& real) {
  o.in_features(real.in_features()).out_features(real.out_features());
}

/// Puts the default CPU generator back as it was on leaving the scope: its
/// engine and cached normal samples copied, which is what get_state and
/// set_state carry, without their state tensor.
class KeepRandomStream {
 public:
  KeepRandomStream() : gen_(at::detail::getDefaultCPUGenerator()) {
    std::lock_guard<std::mutex> lock(gen_.mutex());
    auto* impl = gen_.get<at::CPUGeneratorImpl>();
    engine_ = impl->engine();
    next_float_ = impl->next_float_normal_sample();
    next_double_ = impl->next_double_normal_sample();
  }
  ~KeepRandomStream() {
    std::lock_guard<std::mutex> lock(gen_.mutex());
    auto* impl = gen_.get<at::CPUGeneratorImpl>();
    impl->set_engine(engine_);
    impl->set_next_float_normal_sample(next_float_);
    impl->set_next_double_normal_sample(next_double_);
  }
  KeepRandomStream(const KeepRandomStream&) = delete;
  KeepRandomStream& operator=(const KeepRandomStream&) = delete;

 private:
  at::Generator gen_;
  at::mt19937 engine_;
  c10::optional<float> next_float_;
  c10::optional<double> next_double_;
};

/// A copy of `m` built from `options` (with a bias) holding `w` and `b`: a
/// small module of the kind, given the real options and tensors. The global
/// random generator is left as it was (fusion must not change the random
/// stream a caller relies on).
template <typename Impl, typename Options>
ModulePtr with_weights(const Impl& m, Options options, const at::Tensor& w, const at::Tensor& b) {
  options.bias(true);
  std::shared_ptr<Impl> out;
  {
    KeepRandomStream keep;
    out = std::make_shared<Impl>(small(options));
  }
  restore_sizes(out->options, options);
  at::NoGradGuard no_grad;
  out->weight.set_data(w);
  out->bias.set_data(b);
  out->train(m.is_training());
  return out;
}

template <size_t D>
torch::nn::ConvOptions<D> conv_options(const torch::nn::detail::ConvNdOptions<D>& o) {
  return torch::nn::ConvOptions<D>(o.in_channels(), o.out_channels(), o.kernel_size())
      .stride(o.stride())
      .padding(o.padding())
      .dilation(o.dilation())
      .groups(o.groups())
      .padding_mode(o.padding_mode());
}

template <size_t D>
torch::nn::ConvTransposeOptions<D> conv_transpose_options(const torch::nn::detail::ConvNdOptions<D>& o) {
  return torch::nn::ConvTransposeOptions<D>(o.in_channels(), o.out_channels(), o.kernel_size())
      .stride(o.stride())
      .padding(c10::get<torch::ExpandingArray<D>>(o.padding()))
      .output_padding(o.output_padding())
      .dilation(o.dilation())
      .groups(o.groups())
      .padding_mode(o.padding_mode());
}

/// Folds `bn` into `conv` when `conv` is an `Impl`; nullptr otherwise.
template <typename Impl, typename MakeOptions>
ModulePtr try_fold(const torch::nn::Module& conv, const BatchNormState& bn, bool transpose, MakeOptions make_options) {
  const auto* c = dynamic_cast<const Impl*>(&conv);
  if (c == nullptr) return nullptr;
  auto [w, b] =
      fuse_conv_bn_weights(c->weight, c->bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias, transpose);
  return with_weights(*c, make_options(c->options), w, b);
}

void check_same_mode(std::initializer_list<const ModulePtr*> modules, const char* message) {
  bool training = (*modules.begin())->get()->is_training();
  for (const ModulePtr* m : modules) TORCH_CHECK(m->get()->is_training() == training, message);
}

std::string parts(std::initializer_list<const ModulePtr*> modules) {
  std::string out;
  for (const ModulePtr* m : modules) out += (out.empty() ? "" : ", ") + ir::module_type_name(**m);
  return "(" + out + ")";
}

/// The QAT checks PyTorch makes before keeping conv/linear and bn side by side.
void check_qat_bn(int64_t out_features, const torch::nn::Module& bn, const char* what) {
  BatchNormState s = batch_norm_state(bn);
  TORCH_CHECK(s.num_features == out_features, "Output ", what, " must match num_features of BatchNorm");
  TORCH_CHECK(s.affine, "Only support fusing BatchNorm with affine set to True");
  TORCH_CHECK(s.track_running_stats, "Only support fusing BatchNorm with tracking_running_stats set to True");
}

int64_t out_channels(const torch::nn::Module& conv) {
  if (const auto* c = dynamic_cast<const torch::nn::Conv1dImpl*>(&conv)) return c->options.out_channels();
  if (const auto* c = dynamic_cast<const torch::nn::Conv2dImpl*>(&conv)) return c->options.out_channels();
  if (const auto* c = dynamic_cast<const torch::nn::Conv3dImpl*>(&conv)) return c->options.out_channels();
  TORCH_CHECK(false, "Cannot fuse modules: expected Conv1d/2d/3d, got ", ir::module_type_name(conv));
}

/// The fused kind for a conv dimension: ConvBn*d, ConvBnReLU*d or ConvReLU*d.
FusedKind kind_for(const torch::nn::Module& conv, FusedKind d1, FusedKind d2, FusedKind d3) {
  std::string type = ir::module_type_name(conv);
  if (type == "torch.nn.Conv1d") return d1;
  if (type == "torch.nn.Conv2d") return d2;
  TORCH_CHECK(type == "torch.nn.Conv3d", "Cannot fuse modules: expected Conv1d/2d/3d, got ", type);
  return d3;
}

}  // namespace

std::pair<at::Tensor, at::Tensor> fuse_conv_bn_weights(const at::Tensor& conv_w, const at::Tensor& conv_b,
                                                       const at::Tensor& bn_rm, const at::Tensor& bn_rv, double bn_eps,
                                                       const at::Tensor& bn_w, const at::Tensor& bn_b, bool transpose) {
  if (auto folded = detail::fold_conv_bn_loops(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose ? 1 : 0)) {
    return *std::move(folded);
  }
  at::Tensor b = conv_b.defined() ? conv_b : at::zeros_like(bn_rm);
  at::Tensor gamma = bn_w.defined() ? bn_w : at::ones_like(bn_rm);
  at::Tensor beta = bn_b.defined() ? bn_b : at::zeros_like(bn_rm);
  at::Tensor var_rsqrt = at::rsqrt(bn_rv + bn_eps);
  std::vector<int64_t> shape(conv_w.dim(), 1);
  shape[transpose ? 1 : 0] = -1;
  at::NoGradGuard no_grad;
  return {conv_w * (gamma * var_rsqrt).reshape(shape), (b - bn_rm) * var_rsqrt * gamma + beta};
}

std::pair<at::Tensor, at::Tensor> fuse_linear_bn_weights(const at::Tensor& linear_w, const at::Tensor& linear_b,
                                                         const at::Tensor& bn_rm, const at::Tensor& bn_rv,
                                                         double bn_eps, const at::Tensor& bn_w,
                                                         const at::Tensor& bn_b) {
  at::Tensor b = linear_b.defined() ? linear_b : at::zeros_like(bn_rm);
  at::Tensor gamma = bn_w.defined() ? bn_w : at::ones_like(bn_rm);
  at::Tensor beta = bn_b.defined() ? bn_b : at::zeros_like(bn_rm);
  at::NoGradGuard no_grad;
  at::Tensor scale = gamma * at::rsqrt(bn_rv + bn_eps);
  return {linear_w * scale.unsqueeze(-1), (b - bn_rm) * scale + beta};
}

BatchNormState batch_norm_state(const torch::nn::Module& m) {
  BatchNormState s;
  bool ok = read_bn<torch::nn::BatchNorm1dImpl>(m, s) || read_bn<torch::nn::BatchNorm2dImpl>(m, s) ||
            read_bn<torch::nn::BatchNorm3dImpl>(m, s);
  TORCH_CHECK(ok, "expected a BatchNorm1d/2d/3d to fuse, got ", ir::module_type_name(m));
  TORCH_CHECK(s.running_mean.defined() && s.running_var.defined(),
              "cannot fold a BatchNorm without running statistics (track_running_stats=False)");
  return s;
}

/// PyTorch's message, and what to do about it.
constexpr const char* kEvalOnly =
    "Fusion only for eval! (the batch norm is in training mode: a model saved before model.eval(); save it in eval "
    "mode, or prepare it for quantization-aware training)";

ModulePtr fuse_conv_bn_eval(const torch::nn::Module& conv, const torch::nn::Module& bn, bool transpose) {
  TORCH_CHECK(!(conv.is_training() || bn.is_training()), kEvalOnly);
  return fold_conv_bn(conv, bn, transpose);
}

ModulePtr fold_conv_bn(const torch::nn::Module& conv, const torch::nn::Module& bn, bool transpose) {
  BatchNormState s = batch_norm_state(bn);
  using namespace torch::nn;  // NOLINT: the conv module types
  ModulePtr out = nullptr;
  if (!out) out = try_fold<Conv1dImpl>(conv, s, transpose, conv_options<1>);
  if (!out) out = try_fold<Conv2dImpl>(conv, s, transpose, conv_options<2>);
  if (!out) out = try_fold<Conv3dImpl>(conv, s, transpose, conv_options<3>);
  if (!out) out = try_fold<ConvTranspose1dImpl>(conv, s, transpose, conv_transpose_options<1>);
  if (!out) out = try_fold<ConvTranspose2dImpl>(conv, s, transpose, conv_transpose_options<2>);
  if (!out) out = try_fold<ConvTranspose3dImpl>(conv, s, transpose, conv_transpose_options<3>);
  TORCH_CHECK(out, "Cannot fold BatchNorm into ", ir::module_type_name(conv), ": expected a Conv or ConvTranspose");
  return out;
}

ModulePtr fuse_linear_bn_eval(const torch::nn::Module& linear, const torch::nn::Module& bn) {
  TORCH_CHECK(!(linear.is_training() || bn.is_training()), kEvalOnly);
  return fold_linear_bn(linear, bn);
}

ModulePtr fold_linear_bn(const torch::nn::Module& linear, const torch::nn::Module& bn) {
  const auto* l = dynamic_cast<const torch::nn::LinearImpl*>(&linear);
  TORCH_CHECK(l, "Cannot fold BatchNorm into ", ir::module_type_name(linear), ": expected a Linear");
  BatchNormState s = batch_norm_state(bn);
  auto [w, b] = fuse_linear_bn_weights(l->weight, l->bias, s.running_mean, s.running_var, s.eps, s.weight, s.bias);
  return with_weights(*l, torch::nn::LinearOptions(l->options.in_features(), l->options.out_features()), w, b);
}

ModulePtr fuse_conv_bn(bool is_qat, const ModulePtr& conv, const ModulePtr& bn) {
  check_same_mode({&conv, &bn}, "Conv and BN both must be in the same mode (train or eval).");
  if (!is_qat) return fuse_conv_bn_eval(*conv, *bn);
  check_qat_bn(out_channels(*conv), *bn, "channel of Conv");
  FusedKind kind = kind_for(*conv, FusedKind::kConvBn1d, FusedKind::kConvBn2d, FusedKind::kConvBn3d);
  return make_fused_module(kind, {conv, bn});
}

ModulePtr fuse_conv_bn_relu(bool is_qat, const ModulePtr& conv, const ModulePtr& bn, const ModulePtr& relu) {
  check_same_mode({&conv, &bn, &relu}, "Conv and BN both must be in the same mode (train or eval).");
  if (is_qat) {
    check_qat_bn(out_channels(*conv), *bn, "channel of Conv");
    FusedKind kind = kind_for(*conv, FusedKind::kConvBnReLU1d, FusedKind::kConvBnReLU2d, FusedKind::kConvBnReLU3d);
    return make_fused_module(kind, {conv, bn, relu});
  }
  FusedKind kind = kind_for(*conv, FusedKind::kConvReLU1d, FusedKind::kConvReLU2d, FusedKind::kConvReLU3d);
  return make_fused_module(kind, {fuse_conv_bn_eval(*conv, *bn), relu});
}

ModulePtr fuse_linear_bn(bool is_qat, const ModulePtr& linear, const ModulePtr& bn) {
  check_same_mode({&linear, &bn}, "Linear and BN both must be in the same mode (train or eval).");
  if (!is_qat) return fuse_linear_bn_eval(*linear, *bn);
  const auto* l = dynamic_cast<const torch::nn::LinearImpl*>(linear.get());
  TORCH_CHECK(l, "Cannot fuse train modules: ", parts({&linear, &bn}));
  check_qat_bn(l->options.out_features(), *bn, "features of Linear");
  return make_fused_module(FusedKind::kLinearBn1d, {linear, bn});
}

ModulePtr fuse_convtranspose_bn(bool is_qat, const ModulePtr& convt, const ModulePtr& bn) {
  check_same_mode({&convt, &bn}, "ConvTranspose and BN both must be in the same mode (train or eval).");
  TORCH_CHECK(!is_qat, "Fusing ConvTranspose+BatchNorm not yet supported in QAT.");
  return fuse_conv_bn_eval(*convt, *bn, /*transpose=*/true);
}

}  // namespace qfx::nn
