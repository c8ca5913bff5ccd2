// The ONNX forms of torch.nn.functional's weighted and normalizing ops
// (F.linear, F.convNd, F.layer_norm, ...) and of the shape ops that make
// lists (chunk) or change ranks (unsqueeze, squeeze), clamp and interpolate.

#include "onnx_rules.h"

#include <ATen/ATen.h>

namespace qfx::io::onnx_export {
namespace {

using Kind = Value::Kind;

/// A weight argument: a float constant, or a constant quantized in the graph
/// (quantize_per_channel of a get_attr, then dequantize): its quantized tensor.
at::Tensor weight_of(const Context& c, const Value& v) {
  if (v.kind == Kind::kDequantized && v.constant.isTensor()) return v.constant.toTensor();
  if (v.kind == Kind::kConstant && v.constant.isTensor()) return v.constant.toTensor();
  c.fail("a weight that is not a constant of the model");
}

at::Tensor optional_tensor(const Context& c, const Value& v) {
  return v.kind == Kind::kNone ? at::Tensor() : weight_of(c, v);
}

int64_t int_or(const Context& c, const Value& v, int64_t fallback) {
  return v.kind == Kind::kNone ? fallback : c.int_of(v);
}

std::vector<int64_t> ints_or(const Context& c, const Value& v, std::vector<int64_t> fallback) {
  return v.kind == Kind::kNone ? fallback : c.ints_of(v);
}

Value functional_linear(const Context& c) {
  return linear(c, c.arg(0, "input"), weight_of(c, c.arg(1, "weight")), optional_tensor(c, c.arg(2, "bias")));
}

/// F.convNd(input, weight, bias, stride, padding, dilation, groups).
Value functional_conv(const Context& c) {
  ConvSpec spec;
  spec.stride = ints_or(c, c.arg(3, "stride"), {1});
  const Value& padding = c.arg(4, "padding");
  if (padding.kind == Kind::kConstant && padding.constant.isString()) {
    spec.padding_mode = padding.constant.toStringRef();
  } else {
    spec.padding = ints_or(c, padding, {0});
  }
  spec.dilation = ints_or(c, c.arg(5, "dilation"), {1});
  spec.groups = int_or(c, c.arg(6, "groups"), 1);
  return conv(c, c.arg(0, "input"), weight_of(c, c.arg(1, "weight")), optional_tensor(c, c.arg(2, "bias")), spec);
}

/// F.conv_transposeNd(input, weight, bias, stride, padding, output_padding, groups, dilation).
Value functional_conv_transpose(const Context& c) {
  ConvSpec spec;
  spec.transposed = true;
  spec.stride = ints_or(c, c.arg(3, "stride"), {1});
  spec.padding = ints_or(c, c.arg(4, "padding"), {0});
  spec.output_padding = ints_or(c, c.arg(5, "output_padding"), {0});
  spec.groups = int_or(c, c.arg(6, "groups"), 1);
  spec.dilation = ints_or(c, c.arg(7, "dilation"), {1});
  return conv(c, c.arg(0, "input"), weight_of(c, c.arg(1, "weight")), optional_tensor(c, c.arg(2, "bias")), spec);
}

Value clamp(const Context& c) {
  const Value& lo = c.arg(1, "min");
  const Value& hi = c.arg(2, "max");
  std::string x = c.tensor(c.arg(0));
  std::string min = lo.kind == Kind::kNone ? "" : c.tensor(lo);
  std::string max = hi.kind == Kind::kNone ? "" : c.tensor(hi);
  return Value::tensor(c.g().op("Clip", {x, min, max}, c.hint()));
}

int64_t normalized_dim(const Context& c, int64_t dim, int64_t rank) { return dim < 0 ? dim + rank : dim; }

Value unsqueeze(const Context& c) {
  int64_t dim = normalized_dim(c, c.int_of(c.arg(1, "dim")), c.rank_of_arg(0) + 1);
  return Value::tensor(c.g().op("Unsqueeze", {c.tensor(c.arg(0)), c.g().ints(c.hint() + "_axes", {dim})}, c.hint()));
}

Value squeeze(const Context& c) {
  const Value& dim = c.arg(1, "dim");
  std::vector<std::string> inputs = {c.tensor(c.arg(0))};
  if (dim.kind != Kind::kNone) {
    inputs.push_back(c.g().ints(c.hint() + "_axes", {normalized_dim(c, c.int_of(dim), c.rank_of_arg(0))}));
  }
  return Value::tensor(c.g().op("Squeeze", inputs, c.hint()));
}

/// x.chunk(chunks, dim): Split into the sizes torch.chunk gives on the example run's sizes.
Value chunk(const Context& c) {
  const std::vector<int64_t>& shape = c.shape_of_arg(0);
  int64_t rank = static_cast<int64_t>(shape.size());
  int64_t dim = normalized_dim(c, int_or(c, c.arg(2, "dim"), 0), rank);
  int64_t chunks = c.int_of(c.arg(1, "chunks"));
  int64_t step = (shape[dim] + chunks - 1) / chunks;
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < shape[dim]; start += step) sizes.push_back(std::min(step, shape[dim] - start));
  std::vector<std::string> outs = c.g().node("Split", {c.tensor(c.arg(0)), c.g().ints(c.hint() + "_split", sizes)},
                                             c.hint(), sizes.size(), {{"axis", dim}});
  std::vector<Value> items;
  for (const std::string& name : outs) items.push_back(Value::tensor(name));
  return Value::list(std::move(items));
}

Value elu(const Context& c) {
  const Value& alpha = c.arg(1, "alpha");
  return unary(c, "Elu", {{"alpha", static_cast<float>(alpha.kind == Kind::kNone ? 1.0 : c.double_of(alpha))}});
}

Value leaky_relu(const Context& c) {
  const Value& slope = c.arg(1, "negative_slope");
  return unary(c, "LeakyRelu", {{"alpha", static_cast<float>(slope.kind == Kind::kNone ? 0.01 : c.double_of(slope))}});
}

/// F.layer_norm(input, normalized_shape, weight, bias, eps).
double eps_or_default(const Context& c, const Value& eps) { return eps.kind == Kind::kNone ? 1e-5 : c.double_of(eps); }

Value functional_layer_norm(const Context& c) {
  std::vector<int64_t> shape = c.ints_of(c.arg(1, "normalized_shape"));
  const Value& eps = c.arg(4, "eps");
  return layer_norm(c, c.tensor(c.arg(0)), shape, optional_tensor(c, c.arg(2, "weight")),
                    optional_tensor(c, c.arg(3, "bias")), eps_or_default(c, eps));
}

/// F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps).
Value functional_instance_norm(const Context& c) {
  if (int_or(c, c.arg(5, "use_input_stats"), 1) == 0)
    c.fail("instance_norm on running statistics has no ONNX form here");
  int64_t channels = c.shape_of_arg(0).at(1);
  return instance_norm(c, c.tensor(c.arg(0)), channels, optional_tensor(c, c.arg(3, "weight")),
                       optional_tensor(c, c.arg(4, "bias")), eps_or_default(c, c.arg(7, "eps")));
}

/// F.group_norm(input, num_groups, weight, bias, eps).
Value functional_group_norm(const Context& c) {
  return group_norm(c, c.int_of(c.arg(1, "num_groups")), optional_tensor(c, c.arg(2, "weight")),
                    optional_tensor(c, c.arg(3, "bias")), eps_or_default(c, c.arg(4, "eps")));
}

/// torch.stack(tensors, dim): each unsqueezed at dim, then Concat.
Value stack(const Context& c) {
  const Value& tensors = c.arg(0, "tensors");
  if (tensors.kind != Kind::kList || tensors.items.empty()) c.fail("stack of something other than a list of tensors");
  const ir::Argument& first = c.node().args()[0].items().at(0);
  int64_t rank = first.is_node() ? static_cast<int64_t>(c.shape_of(first.to_node()).size()) : 0;
  int64_t dim = normalized_dim(c, int_or(c, c.arg(1, "dim"), 0), rank + 1);
  std::string axes = c.g().ints(c.hint() + "_axes", {dim});
  std::vector<std::string> parts;
  for (const Value& t : tensors.items) parts.push_back(c.g().op("Unsqueeze", {c.tensor(t), axes}, c.hint() + "_item"));
  return Value::tensor(c.g().op("Concat", parts, c.hint(), {{"axis", dim}}));
}

/// x.dim(): the example run's rank, a constant.
Value dim(const Context& c) { return Value::of_constant(c.rank_of_arg(0)); }

/// F.interpolate(input, size, scale_factor, mode, align_corners): Resize to
/// the example run's output sizes (the leading two dims from the input's shape).
Value interpolate(const Context& c) {
  const Value& mode_arg = c.arg(3, "mode");
  std::string mode = mode_arg.kind == Kind::kNone ? "nearest" : mode_arg.constant.toStringRef();
  const Value& corners = c.arg(4, "align_corners");
  bool align_corners = corners.kind != Kind::kNone && c.int_of(corners) != 0;
  std::vector<Attr> attrs;
  if (mode == "nearest") {
    attrs = {{"mode", std::string("nearest")},
             {"coordinate_transformation_mode", std::string("asymmetric")},
             {"nearest_mode", std::string("floor")}};
  } else if (mode == "bilinear" || mode == "linear" || mode == "trilinear") {
    attrs = {{"mode", std::string("linear")},
             {"coordinate_transformation_mode", std::string(align_corners ? "align_corners" : "pytorch_half_pixel")}};
  } else {
    c.fail("interpolate mode '" + mode + "' has no ONNX form here");
  }
  std::string hint = c.hint(), x = c.tensor(c.arg(0));
  const std::vector<int64_t>& out = c.shape();
  std::string leading = c.g().op(
      "Slice",
      {c.g().op("Shape", {x}, hint + "_shape"), c.g().ints(hint + "_starts", {0}), c.g().ints(hint + "_ends", {2})},
      hint + "_leading");
  std::string sizes = c.g().op("Concat", {leading, c.g().ints(hint + "_spatial", {out.begin() + 2, out.end()})},
                               hint + "_sizes", {{"axis", int64_t{0}}});
  return Value::tensor(c.g().op("Resize", {x, "", "", sizes}, hint, attrs));
}

/// x.repeat(*sizes): Tile.
Value repeat(const Context& c) {
  std::vector<int64_t> repeats;
  if (c.num_args() == 2) {
    repeats = c.ints_of(c.arg(1));
  } else {
    for (size_t i = 1; i < c.num_args(); ++i) repeats.push_back(c.int_of(c.arg(i)));
  }
  if (static_cast<int64_t>(repeats.size()) != c.rank_of_arg(0)) c.fail("repeat that adds dims has no ONNX form here");
  return Value::tensor(c.g().op("Tile", {c.tensor(c.arg(0)), c.g().ints(c.hint() + "_repeats", repeats)}, c.hint()));
}

/// F.pad(x, pad, mode, value): torch's pads (last dim first, begin and end
/// for each) as ONNX's (every dim's begin, then every end); reflect and
/// replicate are Pad's reflect and edge modes.
Value pad(const Context& c) {
  std::vector<int64_t> pads = c.ints_of(c.arg(1, "pad"));
  int64_t rank = c.rank_of_arg(0);
  if (pads.size() % 2 != 0 || static_cast<int64_t>(pads.size()) > 2 * rank) {
    c.fail("F.pad with " + std::to_string(pads.size()) + " pads for a rank-" + std::to_string(rank) + " tensor");
  }
  std::vector<int64_t> onnx_pads(2 * rank, 0);
  for (size_t i = 0; i < pads.size() / 2; ++i) {
    int64_t dim = rank - 1 - static_cast<int64_t>(i);
    onnx_pads[dim] = pads[2 * i];
    onnx_pads[rank + dim] = pads[2 * i + 1];
  }
  const Value& mode = c.arg(2, "mode");
  std::string torch_mode = mode.kind == Kind::kNone ? "constant" : mode.constant.toStringRef();
  static const std::map<std::string, std::string> kModes = {
      {"constant", "constant"}, {"reflect", "reflect"}, {"replicate", "edge"}};
  auto onnx_mode = kModes.find(torch_mode);
  if (onnx_mode == kModes.end()) c.fail("F.pad mode '" + torch_mode + "' has no ONNX form here");
  std::vector<std::string> inputs = {c.tensor(c.arg(0)), c.g().ints(c.hint() + "_pads", onnx_pads)};
  const Value& value = c.arg(3, "value");
  if (value.kind != Kind::kNone) inputs.push_back(c.tensor(value));
  return Value::tensor(c.g().op("Pad", inputs, c.hint(), {{"mode", onnx_mode->second}}));
}

/// x.masked_fill(mask, value): Where(mask, value, x); a number value in x's dtype.
Value masked_fill(const Context& c) {
  const Value& value = c.arg(2, "value");
  bool number = value.kind == Kind::kConstant && !value.constant.isTensor();
  std::string fill = number ? c.g().initializer(c.hint() + "_value",
                                                at::scalar_tensor(value.constant.toScalar(), c.dtype_of(c.arg_node(0))))
                            : c.tensor(value);
  return Value::tensor(c.g().op("Where", {c.tensor(c.arg(1, "mask")), fill, c.tensor(c.arg(0))}, c.hint()));
}

}  // namespace

Value layer_norm(const Context& c, const std::string& x, const std::vector<int64_t>& shape, at::Tensor weight,
                 at::Tensor bias, double eps_value) {
  int64_t axis = -static_cast<int64_t>(shape.size());
  std::string hint = c.hint();
  auto eps = static_cast<float>(eps_value);
  if (!weight.defined()) weight = at::ones(shape);
  if (!bias.defined()) bias = at::zeros(shape);
  std::string w = c.constant(hint + "_weight", weight), b = c.constant(hint + "_bias", bias);
  if (c.g().opset() >= 17) {
    return Value::tensor(c.g().op("LayerNormalization", {x, w, b}, hint, {{"axis", axis}, {"epsilon", eps}}));
  }
  std::vector<int64_t> axes;
  for (int64_t a = axis; a < 0; ++a) axes.push_back(a);
  std::vector<Attr> reduce = {{"axes", axes}, {"keepdims", int64_t{1}}};
  std::string centered = c.g().op("Sub", {x, c.g().op("ReduceMean", {x}, hint + "_mean", reduce)}, hint + "_centered");
  std::string var =
      c.g().op("ReduceMean", {c.g().op("Mul", {centered, centered}, hint + "_square")}, hint + "_var", reduce);
  std::string eps_name = c.g().initializer(hint + "_eps", at::scalar_tensor(eps, at::kFloat));
  std::string std_dev = c.g().op("Sqrt", {c.g().op("Add", {var, eps_name}, hint + "_var_eps")}, hint + "_std");
  std::string normed = c.g().op("Div", {centered, std_dev}, hint + "_normed");
  return Value::tensor(c.g().op("Add", {c.g().op("Mul", {normed, w}, hint + "_scaled"), b}, hint));
}

const std::map<std::string, Rule>& functional_rules() {
  static const std::map<std::string, Rule> kRules = {
      {"torch.nn.functional.linear", functional_linear},
      {"torch.nn.functional.conv1d", functional_conv},
      {"torch.nn.functional.conv2d", functional_conv},
      {"torch.nn.functional.conv3d", functional_conv},
      {"torch.nn.functional.conv_transpose1d", functional_conv_transpose},
      {"torch.nn.functional.conv_transpose2d", functional_conv_transpose},
      {"torch.nn.functional.conv_transpose3d", functional_conv_transpose},
      {"torch.nn.functional.layer_norm", functional_layer_norm},
      {"torch.nn.functional.instance_norm", functional_instance_norm},
      {"torch.nn.functional.group_norm", functional_group_norm},
      {"torch.stack", stack},
      {"torch.nn.functional.elu", elu},
      {"torch.nn.functional.leaky_relu", leaky_relu},
      {"torch.clamp", clamp},
      {"torch.unsqueeze", unsqueeze},
      {"torch.squeeze", squeeze},
      {"torch.chunk", chunk},
      {"torch.nn.functional.interpolate", interpolate},
      {"torch.nn.functional.pad", pad},
      {"torch.masked_fill", masked_fill},
  };
  return kRules;
}

const std::map<std::string, Rule>& functional_method_rules() {
  static const std::map<std::string, Rule> kRules = {
      {"clamp", clamp}, {"unsqueeze", unsqueeze},     {"squeeze", squeeze}, {"chunk", chunk}, {"repeat", repeat},
      {"dim", dim},     {"masked_fill", masked_fill},
  };
  return kRules;
}

}  // namespace qfx::io::onnx_export
