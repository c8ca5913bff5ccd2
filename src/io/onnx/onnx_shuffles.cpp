// The ONNX forms of the ops that move channels and pixels without changing
// them: pixel_shuffle (DepthToSpace in CRD order), pixel_unshuffle and
// channel_shuffle (a Reshape that splits dims, a Transpose, a Reshape that
// joins them). The split shapes come from the example run; a leading 0
// copies the batch dim, so the batch stays dynamic.

#include "onnx_rules.h"

#include <ATen/ATen.h>

namespace qfx::io::onnx_export {
namespace {

/// Argument 0 reshaped to `split` (its batch dim copied), transposed by
/// `perm`, then reshaped to `joined` (its batch dim copied).
Value split_transpose_join(const Context& c, std::vector<int64_t> split, const std::vector<int64_t>& perm,
                           std::vector<int64_t> joined) {
  split[0] = joined[0] = 0;
  const std::string& h = c.hint();
  std::string x = c.g().op("Reshape", {c.tensor(c.arg(0)), c.g().ints(h + "_split", split)}, h + "_split");
  std::string t = c.g().op("Transpose", {x}, h + "_transposed", {{"perm", perm}});
  return Value::tensor(c.g().op("Reshape", {t, c.g().ints(h + "_joined", joined)}, h));
}

/// The example run's sizes of argument 0, which must be [N, C, H, W].
const std::vector<int64_t>& image_shape(const Context& c) {
  if (c.rank_of_arg(0) != 4)
    c.fail("a " + std::to_string(c.rank_of_arg(0)) + "-d input (ONNX's form is for [N, C, H, W])");
  return c.shape_of(c.node().args()[0].to_node());
}

/// [N, C r^2, H, W] -> [N, C, H r, W r].
Value pixel_shuffle(const Context& c) {
  image_shape(c);
  int64_t r = c.int_of(c.arg(1, "upscale_factor"));
  return unary(c, "DepthToSpace", {{"blocksize", r}, {"mode", std::string("CRD")}});
}

/// [N, C, H r, W r] -> [N, C r^2, H, W]: channel c r^2 + i r + j holds pixel (h r + i, w r + j).
Value pixel_unshuffle(const Context& c) {
  const std::vector<int64_t>& s = image_shape(c);
  int64_t r = c.int_of(c.arg(1, "downscale_factor"));
  int64_t n = s[0], ch = s[1], h = s[2] / r, w = s[3] / r;
  return split_transpose_join(c, {n, ch, h, r, w, r}, {0, 1, 3, 5, 2, 4}, {n, ch * r * r, h, w});
}

/// [N, C, ...] with C = g k -> channel i k + j moves to j g + i.
Value channel_shuffle(const Context& c) {
  if (c.rank_of_arg(0) < 3) c.fail("channel_shuffle of a tensor of rank below 3");
  std::vector<int64_t> s = c.shape_of(c.node().args()[0].to_node());
  int64_t g = c.int_of(c.arg(1, "groups"));
  std::vector<int64_t> split = {s[0], g, s[1] / g};
  split.insert(split.end(), s.begin() + 2, s.end());
  std::vector<int64_t> perm = {0, 2, 1};
  for (size_t i = 3; i < split.size(); ++i) perm.push_back(static_cast<int64_t>(i));
  return split_transpose_join(c, split, perm, s);
}

}  // namespace

const std::map<std::string, Rule>& shuffle_rules() {
  static const std::map<std::string, Rule> kRules = {
      {"torch.nn.functional.pixel_shuffle", pixel_shuffle},
      {"torch.nn.functional.pixel_unshuffle", pixel_unshuffle},
      {"torch.nn.functional.channel_shuffle", channel_shuffle},
  };
  return kRules;
}

}  // namespace qfx::io::onnx_export
