// Normalizations over per-sample statistics: InstanceNorm (ONNX's
// InstanceNormalization) and GroupNorm (InstanceNormalization over the
// groups of a [batch, groups, rest] view, then the per-channel affine).

#include "onnx_rules.h"

#include <ATen/ATen.h>

namespace qfx::io::onnx_export {
namespace {

/// `t` [channels] shaped to broadcast over dim 1 of a rank-`rank` tensor.
at::Tensor channel_shaped(const at::Tensor& t, int64_t rank) {
  std::vector<int64_t> shape = {t.numel()};
  for (int64_t i = 2; i < rank; ++i) shape.push_back(1);
  return t.reshape(shape);
}

}  // namespace

Value instance_norm(const Context& c, const std::string& x, int64_t channels, at::Tensor weight, at::Tensor bias,
                    double eps) {
  if (!weight.defined()) weight = at::ones({channels});
  if (!bias.defined()) bias = at::zeros({channels});
  return Value::tensor(c.g().op(
      "InstanceNormalization",
      {x, c.constant(c.hint() + "_weight", weight.to(at::kFloat)), c.constant(c.hint() + "_bias", bias.to(at::kFloat))},
      c.hint(), {{"epsilon", static_cast<float>(eps)}}));
}

Value group_norm(const Context& c, int64_t groups, const at::Tensor& weight, const at::Tensor& bias, double eps) {
  auto& g = c.g();
  const std::string hint = c.hint();
  std::string x = c.tensor(c.arg(0));
  int64_t rank = c.rank_of_arg(0);
  std::string grouped = g.op("Reshape", {x, g.ints(hint + "_groups", {0, groups, -1})}, hint + "_grouped");
  std::string normed = g.op(
      "InstanceNormalization",
      {grouped, g.initializer(hint + "_ones", at::ones({groups})), g.initializer(hint + "_zeros", at::zeros({groups}))},
      hint + "_normed", {{"epsilon", static_cast<float>(eps)}});
  std::string out = g.op("Reshape", {normed, g.op("Shape", {x}, hint + "_shape")}, hint + "_ungrouped");
  if (weight.defined())
    out = g.op("Mul", {out, c.constant(hint + "_weight", channel_shaped(weight, rank))}, hint + "_scaled");
  if (bias.defined()) out = g.op("Add", {out, c.constant(hint + "_bias", channel_shaped(bias, rank))}, hint);
  return Value::tensor(out);
}

}  // namespace qfx::io::onnx_export
