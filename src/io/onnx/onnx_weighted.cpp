// Convolutions, linear layers and embeddings: the one place weights become
// initializers. A quantized weight is stored once as its integers with
// scale and zero point and dequantized by a DequantizeLinear in front of
// its op; a float16 weight as halves cast to float.

#include "onnx_rules.h"

#include <ATen/ATen.h>

#include <limits>

namespace qfx::io::onnx_export {
namespace {

bool is_per_channel(const at::Tensor& q) {
  return q.qscheme() == c10::kPerChannelAffine || q.qscheme() == c10::kPerChannelSymmetric ||
         q.qscheme() == c10::kPerChannelAffineFloatQParams;
}

/// The weight's scale as float: 0-d per tensor, 1-d per channel.
at::Tensor weight_scale(const at::Tensor& q) {
  if (is_per_channel(q)) return q.q_per_channel_scales().to(at::kFloat);
  return at::scalar_tensor(q.q_scale(), at::kFloat);
}

}  // namespace

std::string weight_input(const Context& c, const at::Tensor& weight, bool transpose, const std::string& hint) {
  if (!weight.is_quantized()) {
    at::Tensor w = transpose ? weight.t().contiguous() : weight;
    std::string name = c.constant(hint, w);
    if (w.scalar_type() == at::kHalf) name = c.g().op("Cast", {name}, hint + "_float", {{"to", int64_t{1}}});
    return name;
  }
  TORCH_CHECK(weight.qscheme() != c10::kPerChannelAffineFloatQParams,
              "ONNX export: weights with float zero points are exported by embedding()");
  at::Tensor ints = weight.int_repr();
  int64_t axis = is_per_channel(weight) ? weight.q_per_channel_axis() : -1;
  if (transpose) {
    ints = ints.t().contiguous();
    if (axis >= 0) axis = 1 - axis;
  }
  at::Tensor zero_point =
      is_per_channel(weight) ? weight.q_per_channel_zero_points() : at::scalar_tensor(weight.q_zero_point(), at::kLong);
  QParams q = c.g().qparams(hint, weight_scale(weight), zero_point, weight.scalar_type(), axis);
  return c.g().dequantize(c.constant(hint + "_quantized", ints), q, hint + "_dequantized");
}

namespace {

/// The bias input: int32 (scale = input scale x weight scale, zero point 0)
/// when input and weight are quantized, so ONNX Runtime fuses the op into
/// an integer kernel; float otherwise; "" when there is none.
std::string bias_input(const Context& c, const Value& x, const at::Tensor& weight, const at::Tensor& bias,
                       const std::string& hint) {
  if (!bias.defined()) return "";
  bool fusable = weight.is_quantized() && x.kind == Value::Kind::kDequantized && x.qparams.axis < 0 &&
                 x.qparams.scale_value.defined();
  if (!fusable) return c.constant(hint, bias.to(at::kFloat));
  at::Tensor scale = x.qparams.scale_value * weight_scale(weight);  // float products, as ONNX Runtime's quantizer
  at::Tensor ints = at::round(bias.to(at::kFloat) / scale);
  double limit = std::numeric_limits<int32_t>::max();
  ints = ints.clamp(-limit, limit).to(at::kInt);
  QParams q = c.g().qparams(hint, scale, at::zeros_like(scale, at::kInt), c10::kQInt32, scale.dim() == 1 ? 0 : -1);
  return c.g().dequantize(c.g().initializer(hint + "_quantized", ints), q, hint + "_dequantized");
}

std::vector<int64_t> repeat(const std::vector<int64_t>& v, size_t n) {
  if (v.size() == n) return v;
  return std::vector<int64_t>(n, v.empty() ? 0 : v.front());
}

/// ONNX's pads (all begins, then all ends) for torch's padding.
std::vector<int64_t> conv_pads(const Context& c, const ConvSpec& spec, const std::vector<int64_t>& kernel,
                               const std::vector<int64_t>& dilation) {
  size_t n = kernel.size();
  std::vector<int64_t> pads(2 * n, 0);
  if (spec.padding_mode == "valid") return pads;
  for (size_t i = 0; i < n; ++i) {
    if (spec.padding_mode == "same") {
      int64_t total = dilation[i] * (kernel[i] - 1);
      pads[i] = total / 2;
      pads[n + i] = total - total / 2;
    } else {
      pads[i] = pads[n + i] = repeat(spec.padding, n)[i];
    }
  }
  return pads;
}

}  // namespace

Value conv(const Context& c, const Value& x, const at::Tensor& weight, const at::Tensor& bias, const ConvSpec& spec) {
  if (spec.padding_mode != "zeros" && spec.padding_mode != "same" && spec.padding_mode != "valid") {
    c.fail("convolutions with padding_mode '" + spec.padding_mode + "' have no ONNX form here");
  }
  std::vector<int64_t> kernel(weight.sizes().begin() + 2, weight.sizes().end());
  size_t n = kernel.size();
  std::vector<int64_t> dilation = repeat(spec.dilation.empty() ? std::vector<int64_t>{1} : spec.dilation, n);
  std::vector<Attr> attrs = {{"kernel_shape", kernel},
                             {"strides", repeat(spec.stride.empty() ? std::vector<int64_t>{1} : spec.stride, n)},
                             {"dilations", dilation},
                             {"pads", conv_pads(c, spec, kernel, dilation)},
                             {"group", spec.groups}};
  if (spec.transposed && !spec.output_padding.empty())
    attrs.push_back({"output_padding", repeat(spec.output_padding, n)});
  std::string hint = c.hint();
  std::vector<std::string> inputs = {c.tensor(x), weight_input(c, weight, false, hint + "_weight")};
  std::string b = bias_input(c, x, weight, bias, hint + "_bias");
  if (!b.empty()) inputs.push_back(b);
  return Value::tensor(c.g().op(spec.transposed ? "ConvTranspose" : "Conv", inputs, hint, attrs));
}

Value linear(const Context& c, const Value& x, const at::Tensor& weight, const at::Tensor& bias) {
  std::string hint = c.hint();
  std::string b = bias_input(c, x, weight, bias, hint + "_bias");
  if (c.rank_of_arg(0) == 2) {
    std::vector<std::string> inputs = {c.tensor(x), weight_input(c, weight, false, hint + "_weight")};
    if (!b.empty()) inputs.push_back(b);
    return Value::tensor(c.g().op("Gemm", inputs, hint, {{"transB", int64_t{1}}}));
  }
  std::string y = c.g().op("MatMul", {c.tensor(x), weight_input(c, weight, true, hint + "_weight")},
                           b.empty() ? hint : hint + "_matmul");
  return Value::tensor(b.empty() ? y : c.g().op("Add", {y, b}, hint));
}

Value embedding(const Context& c, const Value& indices, const at::Tensor& weight) {
  std::string hint = c.hint();
  std::string table;
  if (weight.is_quantized() && weight.qscheme() == c10::kPerChannelAffineFloatQParams) {
    // (q - zero_point) * scale with float zero points: DequantizeLinear with
    // zero point 0, minus zero_point * scale per row.
    at::Tensor scale = weight.q_per_channel_scales().to(at::kFloat);
    at::Tensor zero_point = weight.q_per_channel_zero_points().to(at::kFloat);
    QParams q = c.g().qparams(hint + "_weight", scale, at::zeros_like(scale, at::kLong), weight.scalar_type(), 0);
    std::string dq =
        c.g().dequantize(c.constant(hint + "_weight_quantized", weight.int_repr()), q, hint + "_weight_dequantized");
    std::string offset = c.g().initializer(hint + "_weight_offset", (zero_point * scale).unsqueeze(1));
    table = c.g().op("Sub", {dq, offset}, hint + "_weight_float");
  } else {
    table = weight_input(c, weight, false, hint + "_weight");
  }
  return Value::tensor(c.g().op("Gather", {table, c.tensor(indices)}, hint));
}

Value embedding_bag(const Context& c, const at::Tensor& weight, bool mean, bool include_last_offset) {
  auto& g = c.g();
  const std::string hint = c.hint();
  std::string rows = embedding(c, c.arg(0, "input"), weight).name;
  const Value& per_sample = c.arg(2, "per_sample_weights");
  if (per_sample.kind != Value::Kind::kNone) {
    std::string column = g.op("Unsqueeze", {c.tensor(per_sample), g.ints(hint + "_axes", {-1})}, hint + "_weights");
    rows = g.op("Mul", {rows, column}, hint + "_weighted");
  }
  if (c.rank_of_arg(0) == 2) {  // one bag per row
    if (mean)
      return Value::tensor(
          g.op("ReduceMean", {rows}, hint, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}}));
    return Value::tensor(g.op("ReduceSum", {rows, g.ints(hint + "_axes", {1})}, hint, {{"keepdims", int64_t{0}}}));
  }
  // bag b holds positions offsets[b] <= j < offsets[b + 1] (the last one up to the end without include_last_offset)
  std::string offsets = c.tensor(c.arg(1, "offsets"));
  std::string length = g.op("Shape", {c.tensor(c.arg(0, "input"))}, hint + "_length");
  auto slice = [&](const std::string& x, int64_t start, int64_t end) {
    return g.op("Slice", {x, g.ints(hint + "_starts", {start}), g.ints(hint + "_ends", {end})}, hint + "_offsets");
  };
  std::string later = slice(offsets, 1, std::numeric_limits<int64_t>::max());
  std::string starts = include_last_offset ? slice(offsets, 0, -1) : offsets;
  std::string ends =
      include_last_offset ? later : g.op("Concat", {later, length}, hint + "_ends", {{"axis", int64_t{0}}});
  auto scalar = [&](const std::string& name, int64_t v) {
    return g.initializer(hint + name, at::scalar_tensor(v, at::kLong));
  };
  std::string positions =
      g.op("Range", {scalar("_zero", 0), g.op("Squeeze", {length}, hint + "_count"), scalar("_one", 1)},
           hint + "_positions");
  auto axis = [&](const std::string& x, int64_t a) {
    return g.op("Unsqueeze", {x, g.ints(hint + "_axes", {a})}, hint + "_bags");
  };
  std::string row = axis(positions, 0);
  std::string inside = g.op("And",
                            {g.op("GreaterOrEqual", {row, axis(starts, 1)}, hint + "_from"),
                             g.op("Less", {row, axis(ends, 1)}, hint + "_to")},
                            hint + "_inside");
  std::string membership = g.op("Cast", {inside}, hint + "_membership", {{"to", int64_t{onnx::TensorProto::FLOAT}}});
  std::string sums = g.op("MatMul", {membership, rows}, mean ? hint + "_sums" : hint);
  if (!mean) return Value::tensor(sums);
  std::string counts =
      g.op("ReduceSum", {membership, g.ints(hint + "_axes", {1})}, hint + "_counts", {{"keepdims", int64_t{1}}});
  std::string at_least_one =
      g.op("Max", {counts, g.initializer(hint + "_one_bag", at::scalar_tensor(1.0, at::kFloat))}, hint + "_divisor");
  return Value::tensor(g.op("Div", {sums, at_least_one}, hint));  // an empty bag's mean is 0
}

}  // namespace qfx::io::onnx_export
