// Leaf builders for modules without weights: activations, pooling, Flatten,
// Dropout, Identity. In-place variants are told apart by the op recorded
// (`aten::relu_` for `ReLU(inplace=True)`).

#include "leaf_modules.h"

#include "qfx/nn/activation.h"

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>

namespace qfx::io::detail {
namespace {

using ModulePtr = std::shared_ptr<torch::nn::Module>;

bool in_place(const ProbedOp& op) { return op.kind.back() == '_'; }

const ProbedOp& op_or_inplace(const Leaf& leaf, const std::string& name) { return leaf.op({name, name + "_"}); }

template <typename Impl>
ModulePtr plain(const Leaf&) {
  return std::make_shared<Impl>();
}

template <typename Impl>
ModulePtr activation(const Leaf& leaf, const std::string& aten) {
  return std::make_shared<Impl>(nn::ActivationOptions().inplace(in_place(op_or_inplace(leaf, aten))));
}

ModulePtr relu(const Leaf& leaf) {
  return std::make_shared<torch::nn::ReLUImpl>(
      torch::nn::ReLUOptions().inplace(in_place(op_or_inplace(leaf, "aten::relu"))));
}

ModulePtr relu6(const Leaf& leaf) {
  const ProbedOp& op = leaf.op({"aten::hardtanh", "aten::hardtanh_", "aten::relu6", "aten::relu6_"});
  return std::make_shared<torch::nn::ReLU6Impl>(torch::nn::ReLU6Options().inplace(in_place(op)));
}

ModulePtr hardtanh(const Leaf& leaf) {
  const ProbedOp& op = op_or_inplace(leaf, "aten::hardtanh");
  return std::make_shared<torch::nn::HardtanhImpl>(torch::nn::HardtanhOptions()
                                                       .min_val(op.to_double("min_val"))
                                                       .max_val(op.to_double("max_val"))
                                                       .inplace(in_place(op)));
}

ModulePtr gelu(const Leaf& leaf) {
  const ProbedOp& op = leaf.op({"aten::gelu"});
  std::string approximate = op.has("approximate") ? op.constant("approximate").toStringRef() : "none";
  return std::make_shared<torch::nn::GELUImpl>(torch::nn::GELUOptions().approximate(approximate));
}

ModulePtr leaky_relu(const Leaf& leaf) {
  const ProbedOp& op = op_or_inplace(leaf, "aten::leaky_relu");
  return std::make_shared<torch::nn::LeakyReLUImpl>(
      torch::nn::LeakyReLUOptions().negative_slope(op.to_double("negative_slope")).inplace(in_place(op)));
}

ModulePtr elu(const Leaf& leaf) {
  const ProbedOp& op = op_or_inplace(leaf, "aten::elu");
  return std::make_shared<torch::nn::ELUImpl>(
      torch::nn::ELUOptions().alpha(op.to_double("alpha")).inplace(in_place(op)));
}

ModulePtr softmax(const Leaf& leaf) {
  return std::make_shared<torch::nn::SoftmaxImpl>(torch::nn::SoftmaxOptions(leaf.op({"aten::softmax"}).to_int("dim")));
}

std::vector<int64_t> stride_or_kernel(const ProbedOp& op, const std::vector<int64_t>& kernel) {
  auto stride = op.ints("stride");
  return stride.empty() ? kernel : stride;
}

// max_poolNd(input, kernel_size, stride, padding, dilation, ceil_mode)
template <size_t D, typename Impl, typename Options>
ModulePtr max_pool(const Leaf& leaf) {
  TORCH_CHECK(leaf.find_op({"aten::max_pool" + std::to_string(D) + "d_with_indices"}) == nullptr,
              "return_indices=True is not supported");
  const ProbedOp& op = leaf.op({"aten::max_pool" + std::to_string(D) + "d"});
  auto kernel = op.ints("kernel_size");
  Options o{torch::ExpandingArray<D>(kernel)};
  o.stride(torch::ExpandingArray<D>(stride_or_kernel(op, kernel))).padding(op.ints("padding"));
  o.dilation(op.ints("dilation")).ceil_mode(op.to_bool("ceil_mode"));
  return std::make_shared<Impl>(o);
}

// avg_poolNd(input, kernel_size, stride, padding, ceil_mode, count_include_pad[, divisor_override])
template <size_t D, typename Impl, typename Options>
ModulePtr avg_pool(const Leaf& leaf) {
  const ProbedOp& op = leaf.op({"aten::avg_pool" + std::to_string(D) + "d"});
  auto kernel = op.ints("kernel_size");
  Options o{torch::ExpandingArray<D>(kernel)};
  o.stride(torch::ExpandingArray<D>(stride_or_kernel(op, kernel))).padding(op.ints("padding"));
  o.ceil_mode(op.to_bool("ceil_mode")).count_include_pad(op.to_bool("count_include_pad"));
  if (op.has("divisor_override") && !op.is_none("divisor_override")) o.divisor_override(op.to_int("divisor_override"));
  return std::make_shared<Impl>(o);
}

template <size_t D, typename Impl, typename Options>
ModulePtr adaptive_avg_pool(const Leaf& leaf) {
  auto size = leaf.op({"aten::adaptive_avg_pool" + std::to_string(D) + "d"}).ints("output_size");
  if (size.size() == 1 && D > 1) size.assign(D, size[0]);
  using OutputSize = std::decay_t<decltype(std::declval<Options>().output_size())>;
  return std::make_shared<Impl>(Options(OutputSize(at::IntArrayRef(size))));
}

ModulePtr flatten(const Leaf& leaf) {
  const ProbedOp& op = leaf.op({"aten::flatten"});
  return std::make_shared<torch::nn::FlattenImpl>(
      torch::nn::FlattenOptions().start_dim(op.to_int("start_dim")).end_dim(op.to_int("end_dim")));
}

ModulePtr dropout(const Leaf& leaf) {
  const ProbedOp& op = op_or_inplace(leaf, "aten::dropout");
  return std::make_shared<torch::nn::DropoutImpl>(torch::nn::DropoutOptions(op.to_double("p")).inplace(in_place(op)));
}

}  // namespace

const std::vector<LeafRow>& simple_leaf_rows() {
  using namespace torch::nn;
  static const std::vector<LeafRow> kRows = {
      {"torch.nn.modules.activation.ReLU", relu},
      {"torch.nn.modules.activation.ReLU6", relu6},
      {"torch.nn.modules.activation.Hardtanh", hardtanh},
      {"torch.nn.modules.activation.Hardswish",
       [](const Leaf& l) { return activation<nn::HardswishImpl>(l, "aten::hardswish"); }},
      {"torch.nn.modules.activation.Hardsigmoid",
       [](const Leaf& l) { return activation<nn::HardsigmoidImpl>(l, "aten::hardsigmoid"); }},
      {"torch.nn.modules.activation.SiLU", [](const Leaf& l) { return activation<nn::SiLUImpl>(l, "aten::silu"); }},
      {"torch.nn.modules.activation.GELU", gelu},
      {"torch.nn.modules.activation.Sigmoid", plain<SigmoidImpl>},
      {"torch.nn.modules.activation.Tanh", plain<TanhImpl>},
      {"torch.nn.modules.activation.LeakyReLU", leaky_relu},
      {"torch.nn.modules.activation.ELU", elu},
      {"torch.nn.modules.activation.Softmax", softmax},
      {"torch.nn.modules.pooling.MaxPool1d", max_pool<1, MaxPool1dImpl, MaxPool1dOptions>},
      {"torch.nn.modules.pooling.MaxPool2d", max_pool<2, MaxPool2dImpl, MaxPool2dOptions>},
      {"torch.nn.modules.pooling.MaxPool3d", max_pool<3, MaxPool3dImpl, MaxPool3dOptions>},
      {"torch.nn.modules.pooling.AvgPool1d", avg_pool<1, AvgPool1dImpl, AvgPool1dOptions>},
      {"torch.nn.modules.pooling.AvgPool2d", avg_pool<2, AvgPool2dImpl, AvgPool2dOptions>},
      {"torch.nn.modules.pooling.AvgPool3d", avg_pool<3, AvgPool3dImpl, AvgPool3dOptions>},
      {"torch.nn.modules.pooling.AdaptiveAvgPool1d",
       adaptive_avg_pool<1, AdaptiveAvgPool1dImpl, AdaptiveAvgPool1dOptions>},
      {"torch.nn.modules.pooling.AdaptiveAvgPool2d",
       adaptive_avg_pool<2, AdaptiveAvgPool2dImpl, AdaptiveAvgPool2dOptions>},
      {"torch.nn.modules.pooling.AdaptiveAvgPool3d",
       adaptive_avg_pool<3, AdaptiveAvgPool3dImpl, AdaptiveAvgPool3dOptions>},
      {"torch.nn.modules.flatten.Flatten", flatten},
      {"torch.nn.modules.dropout.Dropout", dropout},
      {"torch.nn.modules.linear.Identity", plain<IdentityImpl>},
  };
  return kRows;
}

}  // namespace qfx::io::detail
