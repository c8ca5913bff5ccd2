// Leaf builders for modules with weights: Linear, Conv*, ConvTranspose*,
// BatchNorm*, InstanceNorm*, LayerNorm, GroupNorm, Embedding, EmbeddingBag,
// PReLU. Shapes come from the weights, hyper-parameters from the leaf's op.

#include "leaf_modules.h"

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/functional/instancenorm.h>  // before the module, which does not include it
#include <torch/nn/modules/instancenorm.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

namespace qfx::io::detail {
namespace {

using ModulePtr = std::shared_ptr<torch::nn::Module>;

// Copies the leaf's `weight` and `bias`, where it has them.
template <typename Impl>
void copy_weight_and_bias(const Leaf& leaf, Impl& m) {
  at::Tensor w = leaf.tensor("weight");
  if (w.defined()) assign(m.weight, w);
  at::Tensor b = leaf.tensor("bias");
  if (b.defined()) assign(m.bias, b);
}

template <typename Impl, typename Options>
ModulePtr with_weight_and_bias(const Leaf& leaf, const Options& options) {
  auto m = std::make_shared<Impl>(options);
  copy_weight_and_bias(leaf, *m);
  return m;
}

ModulePtr linear(const Leaf& leaf) {
  at::Tensor w = leaf.tensor("weight");
  return with_weight_and_bias<torch::nn::LinearImpl>(
      leaf, torch::nn::LinearOptions(w.size(1), w.size(0)).bias(leaf.tensor("bias").defined()));
}

// Padding mode and amounts from an explicit pad op before the convolution
// (Python pads with `_reversed_padding_repeated_twice` for non-zero modes).
template <size_t D, typename Options>
void apply_padding_mode(const Leaf& leaf, Options& o) {
  const ProbedOp* pad = leaf.find_op({"aten::pad", "aten::reflection_pad1d", "aten::reflection_pad2d",
                                      "aten::reflection_pad3d", "aten::replication_pad1d", "aten::replication_pad2d",
                                      "aten::replication_pad3d", "aten::_pad_circular"});
  if (pad == nullptr) return;
  std::string mode = pad->kind == "aten::pad"                             ? pad->constant("mode").toStringRef()
                     : pad->kind.find("reflection") != std::string::npos  ? "reflect"
                     : pad->kind.find("replication") != std::string::npos ? "replicate"
                                                                          : "circular";
  auto amounts = pad->ints(pad->has("pad") ? "pad" : "padding");
  std::vector<int64_t> padding(D);
  for (size_t d = 0; d < D; ++d) padding[d] = amounts.at(2 * (D - 1 - d));
  o.padding(torch::ExpandingArray<D>(padding));
  if (mode == "reflect")
    o.padding_mode(torch::kReflect);
  else if (mode == "replicate")
    o.padding_mode(torch::kReplicate);
  else if (mode == "circular")
    o.padding_mode(torch::kCircular);
}

template <size_t D, typename Impl, typename Options>
ModulePtr conv(const Leaf& leaf) {
  at::Tensor w = leaf.tensor("weight");
  at::Tensor b = leaf.tensor("bias");
  std::string named = "aten::conv" + std::to_string(D) + "d";
  const ProbedOp& op = leaf.op({"aten::_convolution", "aten::convolution", named});
  int64_t groups = op.to_int("groups");
  Options o(w.size(1) * groups, w.size(0), torch::ExpandingArray<D>(w.sizes().slice(2)));
  o.stride(op.ints("stride")).dilation(op.ints("dilation")).groups(groups).bias(b.defined());
  const c10::IValue& padding = op.constant("padding");
  if (padding.isString()) {
    if (padding.toStringRef() == "same")
      o.padding(torch::kSame);
    else
      o.padding(torch::kValid);
  } else {
    o.padding(torch::ExpandingArray<D>(padding.toIntVector()));
  }
  apply_padding_mode<D>(leaf, o);
  return with_weight_and_bias<Impl>(leaf, o);
}

template <size_t D, typename Impl, typename Options>
ModulePtr conv_transpose(const Leaf& leaf) {
  at::Tensor w = leaf.tensor("weight");
  at::Tensor b = leaf.tensor("bias");
  std::string named = "aten::conv_transpose" + std::to_string(D) + "d";
  const ProbedOp& op = leaf.op({"aten::_convolution", "aten::convolution", named});
  int64_t groups = op.to_int("groups");
  Options o(w.size(0), w.size(1) * groups, torch::ExpandingArray<D>(w.sizes().slice(2)));
  o.stride(op.ints("stride")).padding(op.ints("padding")).output_padding(op.ints("output_padding"));
  o.dilation(op.ints("dilation")).groups(groups).bias(b.defined());
  return with_weight_and_bias<Impl>(leaf, o);
}

int64_t num_features(const Leaf& leaf) {
  for (const char* name : {"running_mean", "weight"}) {
    at::Tensor t = leaf.tensor(name);
    if (t.defined()) return t.size(0);
  }
  return leaf.int_attribute("num_features", 0);
}

template <typename Impl>
void copy_norm_state(const Leaf& leaf, Impl& m) {
  copy_weight_and_bias(leaf, m);
  if (m.options.track_running_stats()) {
    assign(m.running_mean, leaf.tensor("running_mean"));
    at::Tensor var = leaf.tensor("running_var");
    TORCH_CHECK(!var.defined() || var.ge(0).all().item<bool>(),
                "running_var holds negative or NaN values, which a variance cannot (a corrupt model)");
    assign(m.running_var, var);
    at::Tensor batches = leaf.tensor("num_batches_tracked");
    if (batches.defined()) assign(m.num_batches_tracked, batches);
  }
}

template <typename Impl, typename Options>
ModulePtr norm(const Leaf& leaf, const char* op_name) {
  const ProbedOp& op = leaf.op({op_name});
  Options o(num_features(leaf));
  o.eps(op.to_double("eps")).momentum(op.to_double("momentum"));
  o.affine(leaf.tensor("weight").defined()).track_running_stats(leaf.tensor("running_mean").defined());
  auto m = std::make_shared<Impl>(o);
  copy_norm_state(leaf, *m);
  return m;
}

template <typename Impl, typename Options>
ModulePtr batch_norm(const Leaf& leaf) {
  return norm<Impl, Options>(leaf, "aten::batch_norm");
}

template <typename Impl, typename Options>
ModulePtr instance_norm(const Leaf& leaf) {
  return norm<Impl, Options>(leaf, "aten::instance_norm");
}

ModulePtr layer_norm(const Leaf& leaf) {
  const ProbedOp& op = leaf.op({"aten::layer_norm"});
  bool affine = leaf.tensor("weight").defined();
  return with_weight_and_bias<torch::nn::LayerNormImpl>(
      leaf,
      torch::nn::LayerNormOptions(op.ints("normalized_shape")).eps(op.to_double("eps")).elementwise_affine(affine));
}

ModulePtr group_norm(const Leaf& leaf) {
  const ProbedOp& op = leaf.op({"aten::group_norm"});
  at::Tensor w = leaf.tensor("weight");
  int64_t channels = w.defined() ? w.size(0) : leaf.int_attribute("num_channels", 0);
  return with_weight_and_bias<torch::nn::GroupNormImpl>(
      leaf,
      torch::nn::GroupNormOptions(op.to_int("num_groups"), channels).eps(op.to_double("eps")).affine(w.defined()));
}

at::Tensor embedding_weight(const Leaf& leaf) {
  TORCH_CHECK(leaf.find_op({"aten::embedding_renorm_"}) == nullptr, "max_norm is not supported");
  return leaf.tensor("weight");
}

ModulePtr embedding(const Leaf& leaf) {
  at::Tensor w = embedding_weight(leaf);
  const ProbedOp& op = leaf.op({"aten::embedding"});
  torch::nn::EmbeddingOptions o(w.size(0), w.size(1));
  if (op.to_int("padding_idx") >= 0) o.padding_idx(op.to_int("padding_idx"));
  o.scale_grad_by_freq(op.to_bool("scale_grad_by_freq")).sparse(op.to_bool("sparse"));
  auto m = std::make_shared<torch::nn::EmbeddingImpl>(o);
  assign(m->weight, w);
  return m;
}

ModulePtr embedding_bag(const Leaf& leaf) {
  at::Tensor w = embedding_weight(leaf);
  const ProbedOp& op = leaf.op({"aten::embedding_bag"});
  torch::nn::EmbeddingBagOptions o(w.size(0), w.size(1));
  int64_t mode = op.to_int("mode");
  if (mode == 0)
    o.mode(torch::kSum);
  else if (mode == 1)
    o.mode(torch::kMean);
  else
    o.mode(torch::kMax);
  o.scale_grad_by_freq(op.to_bool("scale_grad_by_freq")).sparse(op.to_bool("sparse"));
  o.include_last_offset(op.to_bool("include_last_offset"));
  if (op.has("padding_idx") && !op.is_none("padding_idx") && op.to_int("padding_idx") >= 0) {
    o.padding_idx(op.to_int("padding_idx"));
  }
  auto m = std::make_shared<torch::nn::EmbeddingBagImpl>(o);
  assign(m->weight, w);
  return m;
}

ModulePtr prelu(const Leaf& leaf) {
  at::Tensor w = leaf.tensor("weight");
  auto m = std::make_shared<torch::nn::PReLUImpl>(torch::nn::PReLUOptions().num_parameters(w.numel()));
  assign(m->weight, w);
  return m;
}

}  // namespace

const std::vector<LeafRow>& weighted_leaf_rows() {
  using namespace torch::nn;
  static const std::vector<LeafRow> kRows = {
      {"torch.nn.modules.linear.Linear", linear},
      {"torch.nn.modules.conv.Conv1d", conv<1, Conv1dImpl, Conv1dOptions>},
      {"torch.nn.modules.conv.Conv2d", conv<2, Conv2dImpl, Conv2dOptions>},
      {"torch.nn.modules.conv.Conv3d", conv<3, Conv3dImpl, Conv3dOptions>},
      {"torch.nn.modules.conv.ConvTranspose1d", conv_transpose<1, ConvTranspose1dImpl, ConvTranspose1dOptions>},
      {"torch.nn.modules.conv.ConvTranspose2d", conv_transpose<2, ConvTranspose2dImpl, ConvTranspose2dOptions>},
      {"torch.nn.modules.conv.ConvTranspose3d", conv_transpose<3, ConvTranspose3dImpl, ConvTranspose3dOptions>},
      {"torch.nn.modules.batchnorm.BatchNorm1d", batch_norm<BatchNorm1dImpl, BatchNormOptions>},
      {"torch.nn.modules.batchnorm.BatchNorm2d", batch_norm<BatchNorm2dImpl, BatchNormOptions>},
      {"torch.nn.modules.batchnorm.BatchNorm3d", batch_norm<BatchNorm3dImpl, BatchNormOptions>},
      {"torch.nn.modules.instancenorm.InstanceNorm1d", instance_norm<InstanceNorm1dImpl, InstanceNormOptions>},
      {"torch.nn.modules.instancenorm.InstanceNorm2d", instance_norm<InstanceNorm2dImpl, InstanceNormOptions>},
      {"torch.nn.modules.instancenorm.InstanceNorm3d", instance_norm<InstanceNorm3dImpl, InstanceNormOptions>},
      {"torch.nn.modules.normalization.LayerNorm", layer_norm},
      {"torch.nn.modules.normalization.GroupNorm", group_norm},
      {"torch.nn.modules.sparse.Embedding", embedding},
      {"torch.nn.modules.sparse.EmbeddingBag", embedding_bag},
      {"torch.nn.modules.activation.PReLU", prelu},
  };
  return kRows;
}

}  // namespace qfx::io::detail
