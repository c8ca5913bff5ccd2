// The ONNX forms of the ops that move elements without changing them:
// pixel_shuffle (DepthToSpace in CRD order), pixel_unshuffle and
// channel_shuffle (a Reshape that splits dims, a Transpose, a Reshape that
// joins them), roll (two Slices swapped by a Concat), narrow (a Slice) and
// repeat_interleave (Unsqueeze, Tile, Reshape). Shapes come from the example
// run; a leading 0 in a Reshape copies the batch dim, so the batch stays
// symbolic, and an op that would need the batch's size is an error.

#include "onnx_rules.h"

#include <ATen/ATen.h>

namespace qfx::io::onnx_export {
namespace {

using Kind = Value::Kind;

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
  return c.shape_of_arg(0);
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
  std::vector<int64_t> s = c.shape_of_arg(0);
  int64_t g = c.int_of(c.arg(1, "groups"));
  std::vector<int64_t> split = {s[0], g, s[1] / g};
  split.insert(split.end(), s.begin() + 2, s.end());
  std::vector<int64_t> perm = {0, 2, 1};
  for (size_t i = 3; i < split.size(); ++i) perm.push_back(static_cast<int64_t>(i));
  return split_transpose_join(c, split, perm, s);
}

/// Dim `dim` of argument 0 (negative from the end), which must not be a
/// symbolic batch: its extent is the example's.
int64_t fixed_dim(const Context& c, int64_t dim, const char* op) {
  int64_t rank = c.rank_of_arg(0);
  if (dim < -rank || dim >= rank)
    c.fail(std::string(op) + " of dim " + std::to_string(dim) + " of a rank-" + std::to_string(rank) + " tensor");
  if (dim < 0) dim += rank;
  if (dim == 0 && c.dynamic_batch()) {
    c.fail(std::string(op) + " along dim 0, the symbolic batch, has no ONNX form here (--static-batch fixes it)");
  }
  return dim;
}

/// `x[start:end]` along `axis` of ONNX tensor `x`.
std::string slice(const Context& c, const std::string& x, int64_t start, int64_t end, int64_t axis,
                  const std::string& name) {
  return c.g().op(
      "Slice",
      {x, c.g().ints(name + "_starts", {start}), c.g().ints(name + "_ends", {end}), c.g().ints(name + "_axes", {axis})},
      name);
}

/// torch.roll(x, shifts, dims): per dim, its last `shift` elements moved to the front.
Value roll(const Context& c) {
  const Value& dims = c.arg(2, "dims");
  if (dims.kind == Kind::kNone) c.fail("torch.roll without dims (of the flattened tensor) has no ONNX form here");
  std::vector<int64_t> shifts = c.ints_of(c.arg(1, "shifts")), axes = c.ints_of(dims);
  if (shifts.size() != axes.size()) c.fail("torch.roll with a different number of shifts and dims");
  const std::vector<int64_t>& shape = c.shape_of_arg(0);
  std::string x = c.tensor(c.arg(0));
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = fixed_dim(c, axes[i], "torch.roll"), n = shape[axis];
    int64_t shift = n == 0 ? 0 : ((shifts[i] % n) + n) % n;
    if (shift == 0) continue;
    std::string h = c.hint() + "_" + std::to_string(axis);
    std::string tail = slice(c, x, n - shift, n, axis, h + "_tail");
    std::string head = slice(c, x, 0, n - shift, axis, h + "_head");
    x = c.g().op("Concat", {tail, head}, i + 1 == axes.size() ? c.hint() : h, {{"axis", axis}});
  }
  return Value::tensor(x);
}

/// x.narrow(dim, start, length).
Value narrow(const Context& c) {
  int64_t axis = fixed_dim(c, c.int_of(c.arg(1, "dim")), "narrow");
  int64_t start = c.int_of(c.arg(2, "start")), length = c.int_of(c.arg(3, "length"));
  if (start < 0) start += c.shape_of_arg(0)[axis];
  return Value::tensor(slice(c, c.tensor(c.arg(0)), start, start + length, axis, c.hint()));
}

/// x.repeat_interleave(repeats, dim) for an integer `repeats`: each element
/// of dim `dim` repeated in place.
Value repeat_interleave(const Context& c) {
  const Value& dim = c.arg(2, "dim");
  if (dim.kind == Kind::kNone) c.fail("repeat_interleave without dim (of the flattened tensor) has no ONNX form here");
  const Value& repeats = c.arg(1, "repeats");
  if (repeats.kind != Kind::kConstant || !repeats.constant.isInt()) {
    c.fail("repeat_interleave with repeats per element (a tensor) has no ONNX form here");
  }
  int64_t axis = fixed_dim(c, c.int_of(dim), "repeat_interleave");
  const std::string& h = c.hint();
  std::string x = c.g().op("Unsqueeze", {c.tensor(c.arg(0)), c.g().ints(h + "_axes", {axis + 1})}, h + "_unsqueezed");
  std::vector<int64_t> tiles(static_cast<size_t>(c.rank_of_arg(0)) + 1, 1);
  tiles[axis + 1] = repeats.constant.toInt();
  std::string tiled = c.g().op("Tile", {x, c.g().ints(h + "_repeats", tiles)}, h + "_tiled");
  std::vector<int64_t> shape = c.shape();
  if (c.dynamic_batch()) shape[0] = 0;  // the batch of the input (never the dim repeated: fixed_dim)
  return Value::tensor(c.g().op("Reshape", {tiled, c.g().ints(h + "_shape", shape)}, h));
}

}  // namespace

const std::map<std::string, Rule>& shuffle_method_rules() {
  static const std::map<std::string, Rule> kRules = {
      {"roll", roll},
      {"narrow", narrow},
      {"repeat_interleave", repeat_interleave},
  };
  return kRules;
}

const std::map<std::string, Rule>& shuffle_rules() {
  static const std::map<std::string, Rule> kRules = {
      {"torch.nn.functional.pixel_shuffle", pixel_shuffle},
      {"torch.nn.functional.pixel_unshuffle", pixel_unshuffle},
      {"torch.nn.functional.channel_shuffle", channel_shuffle},
      {"torch.roll", roll},
      {"torch.narrow", narrow},
      {"torch.repeat_interleave", repeat_interleave},
  };
  return kRules;
}

}  // namespace qfx::io::onnx_export
