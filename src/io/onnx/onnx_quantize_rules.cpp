// The ONNX forms of quantize_per_tensor / _per_channel / _dynamic, dequantize and
// dtype casts: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, Cast.

#include "onnx_rules.h"

#include "qfx/ir/op_names.h"

#include <ATen/ATen.h>

#include <cmath>
#include <optional>

namespace qfx::io::onnx_export {
namespace {

using Kind = Value::Kind;

c10::ScalarType dtype_of(const Context& c, const Value& v) {
  if (v.kind == Kind::kConstant && v.constant.isInt()) return static_cast<c10::ScalarType>(v.constant.toInt());
  c.fail("the dtype argument is not known at export time");
}

at::Tensor tensor_of(const Context& c, const Value& v) {
  if (v.kind == Kind::kConstant && v.constant.isTensor()) return v.constant.toTensor();
  if (v.kind == Kind::kConstant) return at::scalar_tensor(v.constant.toScalar(), at::kDouble);
  c.fail("a qparam is not known at export time");
}

/// A weight quantized in the graph (functional linear and conv): its
/// quantized tensor, computed once at export; linear() and conv() store it
/// as integers, other uses through Context::tensor.
Value quantized_constant(const at::Tensor& q) {
  Value v;
  v.kind = Kind::kQuantized;
  v.constant = q;
  return v;
}

/// torch.quantize_per_tensor(x, scale, zero_point, dtype) and
/// torch.quantize_per_channel(x, scales, zero_points, axis, dtype).
Value quantize(const Context& c, bool per_channel) {
  const Value& x = c.arg(0);
  at::Tensor scale = tensor_of(c, c.arg(1)), zero_point = tensor_of(c, c.arg(2));
  int64_t axis = per_channel ? c.int_of(c.arg(3)) : -1;
  c10::ScalarType dtype = dtype_of(c, c.arg(per_channel ? 4 : 3));
  if (dtype != c10::kQUInt8 && dtype != c10::kQInt8) c.fail("only quint8 and qint8 quantization has an ONNX form here");
  if (x.kind == Kind::kConstant && x.constant.isTensor()) {
    at::Tensor w = x.constant.toTensor();
    at::Tensor q = per_channel
                       ? at::quantize_per_channel(w, scale.to(at::kDouble), zero_point.to(at::kLong), axis, dtype)
                       : at::quantize_per_tensor(w, scale.item<double>(), zero_point.item<int64_t>(), dtype);
    return quantized_constant(q);
  }
  if (x.kind == Kind::kQuantized) return x;  // clip() kept it in integers, with these qparams
  QParams q = c.g().qparams(c.hint(), scale, zero_point, dtype, axis);
  return Value::quantized(c.g().quantize(c.tensor(x), q, c.hint()), q);
}

/// Dynamic uint8 qparams over [min(x, 0), max(x, 0)] with 7 bits
/// (reduce_range): scale = range / 127 (0.1 for an all-zero input), zero
/// point round(-min / scale) clamped to 0..127, ATen's choose_qparams in
/// float arithmetic (ATen's is double, which can move a zero point by one);
/// then QuantizeLinear.
Value quantize_dynamic_reduced(const Context& c, const std::string& x) {
  std::string hint = c.hint();
  auto scalar = [&](const char* name, float v) {
    return c.g().initializer(hint + name, at::scalar_tensor(v, at::kFloat));
  };
  std::string zero = scalar("_zero", 0.0f);
  std::vector<Attr> all = {{"keepdims", int64_t{0}}};
  std::string lo = c.g().op("Min", {c.g().op("ReduceMin", {x}, hint + "_min", all), zero}, hint + "_lo");
  std::string hi = c.g().op("Max", {c.g().op("ReduceMax", {x}, hint + "_max", all), zero}, hint + "_hi");
  std::string range = c.g().op("Sub", {hi, lo}, hint + "_range");
  // an all-zero input: scale 0.1, as ATen's choose_qparams
  std::string empty = c.g().op("Equal", {range, zero}, hint + "_empty");
  std::string scale = c.g().op(
      "Where",
      {empty, scalar("_default_scale", 0.1f), c.g().op("Div", {range, scalar("_levels", 127.0f)}, hint + "_ratio")},
      hint + "_scale");
  std::string zp =
      c.g().op("Clip",
               {c.g().op("Round", {c.g().op("Neg", {c.g().op("Div", {lo, scale}, hint + "_lo_steps")}, hint + "_neg")},
                         hint + "_round"),
                zero, scalar("_qmax", 127.0f)},
               hint + "_zp_float");
  QParams q;
  q.scale = scale;
  q.zero_point = c.g().op("Cast", {zp}, hint + "_zero_point", {{"to", int64_t{onnx::TensorProto::UINT8}}});
  return Value::quantized(c.g().quantize(x, q, hint), q);
}

/// torch.quantize_per_tensor_dynamic(x, dtype, reduce_range): ONNX's
/// DynamicQuantizeLinear computes the same uint8 qparams over [min(x, 0),
/// max(x, 0)]; with reduce_range the 7-bit qparams are computed by ops;
/// float16 is a Cast.
Value quantize_dynamic(const Context& c) {
  c10::ScalarType dtype = dtype_of(c, c.arg(1));
  std::string x = c.tensor(c.arg(0));
  if (dtype == c10::kHalf) {
    return Value::tensor(c.g().op("Cast", {x}, c.hint(), {{"to", int64_t{onnx::TensorProto::FLOAT16}}}));
  }
  if (dtype != c10::kQUInt8) c.fail("dynamic quantization to other than quint8 or float16 has no ONNX form here");
  if (c.int_of(c.arg(2)) != 0) return quantize_dynamic_reduced(c, x);
  std::vector<std::string> out = c.g().node("DynamicQuantizeLinear", {x}, c.hint(), 3);
  QParams q;
  q.scale = out[1];
  q.zero_point = out[2];
  return Value::quantized(out[0], q);
}

Value dequantize(const Context& c) {
  Value x = c.arg(0);
  if (x.kind == Kind::kQuantized) {
    x.kind = Kind::kDequantized;
    return x;
  }
  // float16 values (`to(torch.float16)`) back to float
  return Value::tensor(c.g().op("Cast", {c.tensor(x)}, c.hint(), {{"to", int64_t{onnx::TensorProto::FLOAT}}}));
}

/// x.to(dtype): float16 and float casts.
Value to(const Context& c) {
  c10::ScalarType dtype = dtype_of(c, c.arg(1, "dtype"));
  if (dtype != c10::kHalf && dtype != c10::kFloat) c.fail("to() other than float16 or float32 has no ONNX form here");
  return Value::tensor(c.g().op("Cast", {c.tensor(c.arg(0))}, c.hint(), {{"to", int64_t{onnx_type(dtype)}}}));
}

}  // namespace

const std::map<std::string, Rule>& quantize_rules() {
  static const std::map<std::string, Rule> kRules = {
      {ir::op::kQuantizePerTensor, [](const Context& c) { return quantize(c, false); }},
      {ir::op::kQuantizePerChannel, [](const Context& c) { return quantize(c, true); }},
      {ir::op::kQuantizePerTensorDynamic, quantize_dynamic},
      {"torch.dequantize", dequantize},
  };
  return kRules;
}

const std::map<std::string, Rule>& quantize_method_rules() {
  static const std::map<std::string, Rule> kRules = {
      {ir::op::kDequantize, dequantize},
      {ir::op::kTo, to},
  };
  return kRules;
}

}  // namespace qfx::io::onnx_export
