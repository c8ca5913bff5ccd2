// The ONNX forms of call_function targets and call_method names: one row
// per FX target, the quantize/dequantize pair first.

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

Value pass_through(const Context& c) { return c.arg(0); }

bool is_number(const Value& v) {
  return v.kind == Kind::kConstant && (v.constant.isInt() || v.constant.isDouble() || v.constant.isBool());
}

/// Python's `a op b` on two numbers known at export time (sizes, dims):
/// ints stay ints (floor division and modulo rounding down), else doubles.
Value folded(const Context& c, const std::string& op_type, const c10::IValue& a, const c10::IValue& b) {
  double x = a.toScalar().toDouble(), y = b.toScalar().toDouble();
  static const std::map<std::string, std::function<bool(double, double)>> kComparisons = {
      {"Greater", std::greater<>()},        {"Less", std::less<>()},      {"GreaterOrEqual", std::greater_equal<>()},
      {"LessOrEqual", std::less_equal<>()}, {"Equal", std::equal_to<>()}, {"NotEqual", std::not_equal_to<>()}};
  auto compare = kComparisons.find(op_type);
  if (compare != kComparisons.end()) return Value::of_constant(compare->second(x, y));
  if ((op_type == "Mod" || op_type == "FloorDiv" || op_type == "Div") && y == 0) c.fail("division by zero");
  if (op_type == "Div") return Value::of_constant(x / y);
  if (!a.isDouble() && !b.isDouble()) {
    int64_t i = a.toScalar().toLong(), j = b.toScalar().toLong();
    int64_t floor_div = i / j - ((i % j != 0) && ((i < 0) != (j < 0)));
    if (op_type == "Add") return Value::of_constant(i + j);
    if (op_type == "Sub") return Value::of_constant(i - j);
    if (op_type == "Mul") return Value::of_constant(i * j);
    if (op_type == "FloorDiv") return Value::of_constant(floor_div);
    if (op_type == "Mod") return Value::of_constant(i - floor_div * j);
  }
  if (op_type == "Add") return Value::of_constant(x + y);
  if (op_type == "Sub") return Value::of_constant(x - y);
  if (op_type == "Mul") return Value::of_constant(x * y);
  if (op_type == "FloorDiv") return Value::of_constant(std::floor(x / y));
  if (op_type == "Mod") return Value::of_constant(x - std::floor(x / y) * y);
  c.fail("no ONNX form for this op on numbers");
}

/// The dtype of a tensor operand of node `c` (argument 0, else 1): integer
/// arithmetic (on sizes, indices) keeps its dtype; float otherwise.
c10::ScalarType operand_dtype(const Context& c) {
  for (size_t i = 0; i < 2 && i < c.node().args().size(); ++i) {
    if (c.node().args()[i].is_node()) return c.dtype_of(c.node().args()[i].to_node());
  }
  return at::kFloat;
}

/// The ONNX tensor of operand `v` of an op on `dtype` values: a number as a
/// scalar of that dtype when it is an integer type, else Context::tensor.
std::string operand(const Context& c, const Value& v, c10::ScalarType dtype) {
  if (is_number(v) && c10::isIntegralType(dtype, true)) {
    return c.g().initializer(c.hint() + "_scalar", at::scalar_tensor(v.constant.toScalar(), dtype));
  }
  return c.tensor(v);
}

/// Python's `a % b` and `a // b` on tensors, as ATen computes them: ONNX's
/// integer Mod has Python's sign rule, and floor division of integers is
/// (a - a % b) / b. On floats from the exact C fmod: the remainder moved
/// into b's sign (fmod + b), the quotient (a - fmod) / b less one there,
/// floored and rounded up when more than 0.5 below (ATen's div_floor).
std::string floor_op(const Context& c, const std::string& op_type, const std::string& a, const std::string& b,
                     bool integral) {
  const std::string& h = c.hint();
  bool mod_only = op_type == "Mod";
  if (integral) {
    std::string mod = c.g().op("Mod", {a, b}, mod_only ? h : h + "_mod", {{"fmod", int64_t{0}}});
    return mod_only ? mod : c.g().op("Div", {c.g().op("Sub", {a, mod}, h + "_multiple"), b}, h);
  }
  auto scalar = [&](const char* name, float v) { return c.g().initializer(h + name, at::scalar_tensor(v)); };
  std::string zero = scalar("_zero", 0.0f);
  std::string fmod = c.g().op("Mod", {a, b}, h + "_fmod", {{"fmod", int64_t{1}}});
  std::string signs = c.g().op(
      "Xor", {c.g().op("Less", {b, zero}, h + "_b_negative"), c.g().op("Less", {fmod, zero}, h + "_fmod_negative")},
      h + "_signs_differ");
  std::string nonzero = c.g().op("Not", {c.g().op("Equal", {fmod, zero}, h + "_fmod_zero")}, h + "_fmod_nonzero");
  std::string moved = c.g().op("And", {nonzero, signs}, h + "_moved");
  if (mod_only) return c.g().op("Where", {moved, c.g().op("Add", {fmod, b}, h + "_shifted"), fmod}, h);
  std::string one = scalar("_one", 1.0f);
  std::string exact = c.g().op("Div", {c.g().op("Sub", {a, fmod}, h + "_multiple"), b}, h + "_exact");
  std::string div = c.g().op("Where", {moved, c.g().op("Sub", {exact, one}, h + "_less"), exact}, h + "_div");
  std::string floor = c.g().op("Floor", {div}, h + "_floor");
  std::string up =
      c.g().op("Greater", {c.g().op("Sub", {div, floor}, h + "_fraction"), scalar("_half", 0.5f)}, h + "_up");
  return c.g().op("Where", {up, c.g().op("Add", {floor, one}, h + "_ceil"), floor}, h);
}

/// `a op b`: folded when both are numbers known at export time, else the
/// ONNX op (comparisons give bool tensors; NotEqual is Not(Equal)); `/` of
/// integers divides their float values, as Python and torch do.
Rule binary(const std::string& op_type) {
  return [op_type](const Context& c) {
    const Value& alpha = c.arg(2, "alpha");
    if (alpha.kind != Kind::kNone && c.double_of(alpha) != 1.0) c.fail("add/sub with alpha != 1");
    const Value& a = c.arg(0);
    const Value& b = c.arg(1, "other");
    if (is_number(a) && is_number(b)) return folded(c, op_type, a.constant, b.constant);
    c10::ScalarType dtype = operand_dtype(c);
    bool integral = c10::isIntegralType(dtype, true);
    std::string x = operand(c, a, dtype), y = operand(c, b, dtype);
    if (op_type == "Mod" || op_type == "FloorDiv") return Value::tensor(floor_op(c, op_type, x, y, integral));
    if (op_type == "Div" && integral) {
      std::vector<Attr> to_float = {{"to", int64_t{onnx::TensorProto::FLOAT}}};
      x = c.g().op("Cast", {x}, c.hint() + "_a", to_float);
      y = c.g().op("Cast", {y}, c.hint() + "_b", to_float);
    }
    if (op_type == "NotEqual") {
      std::string equal = c.g().op("Equal", {x, y}, c.hint() + "_equal");
      return Value::tensor(c.g().op("Not", {equal}, c.hint()));
    }
    return Value::tensor(c.g().op(op_type, {x, y}, c.hint()));
  };
}

/// torch._assert(condition, message): nothing when the condition is known
/// true at export time (a rank or size check); an error otherwise.
Value assert_rule(const Context& c) {
  const Value& condition = c.arg(0);
  if (!is_number(condition)) c.fail("torch._assert on a value known only at run time has no ONNX form here");
  if (condition.constant.toScalar().toDouble() == 0) c.fail("torch._assert fails on the example input");
  return Value{};
}

Rule unary_rule(const std::string& op_type) {
  return [op_type](const Context& c) { return unary(c, op_type); };
}

Value concat(const Context& c) {
  const Value& list = c.arg(0, "tensors");
  if (list.kind != Kind::kList) c.fail("cat of a value that is not a list");
  std::vector<std::string> inputs;
  for (const Value& v : list.items) inputs.push_back(c.tensor(v));
  const Value& dim = c.arg(1, "dim");
  int64_t axis = dim.kind == Kind::kNone ? 0 : c.int_of(dim);
  return Value::tensor(c.g().op("Concat", inputs, c.hint(), {{"axis", axis}}));
}

/// torch.flatten(x, start_dim, end_dim).
Value flatten_rule(const Context& c) {
  const Value& s = c.arg(1, "start_dim");
  const Value& e = c.arg(2, "end_dim");
  return flatten(c, s.kind == Kind::kNone ? 0 : c.int_of(s), e.kind == Kind::kNone ? -1 : c.int_of(e));
}

/// x.size(dim): Gather from Shape, an int64 scalar; x.size(): the shape.
Value size(const Context& c) {
  std::string shape = c.g().op("Shape", {c.tensor(c.arg(0))}, c.hint() + "_shape");
  const Value& dim = c.arg(1, "dim");
  if (dim.kind == Kind::kNone) return Value::tensor(shape);
  std::string index = c.g().initializer(c.hint() + "_index", at::scalar_tensor(c.int_of(dim), at::kLong));
  return Value::tensor(c.g().op("Gather", {shape, index}, c.hint()));
}

/// One dimension of a shape list as a 1-d int64 tensor.
std::string shape_item(const Context& c, const Value& v) {
  if (v.kind == Kind::kConstant) return c.g().ints(c.hint() + "_dim", {c.int_of(v)});
  return c.g().op("Unsqueeze", {c.tensor(v), c.g().ints(c.hint() + "_axes", {0})}, c.hint() + "_dim");
}

/// x.view(*shape) / x.reshape(shape): a constant shape, or a Concat of its dims.
Value reshape(const Context& c) {
  std::vector<Value> dims;
  if (c.num_args() == 2 && c.arg(1).kind == Kind::kList) {
    dims = c.arg(1).items;
  } else if (c.num_args() == 2 && c.arg(1).kind == Kind::kConstant && c.arg(1).constant.isIntList()) {
    for (int64_t d : c.arg(1).constant.toIntVector()) dims.push_back(Value::of_constant(d));
  } else {
    for (size_t i = 1; i < c.num_args(); ++i) dims.push_back(c.arg(i));
  }
  if (dims.empty()) dims.push_back(c.arg(1, "shape"));
  bool constant = std::all_of(dims.begin(), dims.end(), [](const Value& v) { return v.kind == Kind::kConstant; });
  std::string shape;
  if (constant) {
    std::vector<int64_t> values;
    for (const Value& d : dims) values.push_back(c.int_of(d));
    shape = c.g().ints(c.hint() + "_shape", values);
  } else {
    std::vector<std::string> parts;
    for (const Value& d : dims) parts.push_back(shape_item(c, d));
    shape = c.g().op("Concat", parts, c.hint() + "_shape", {{"axis", int64_t{0}}});
  }
  return Value::tensor(c.g().op("Reshape", {c.tensor(c.arg(0)), shape}, c.hint()));
}

Value getitem(const Context& c) {
  const Value& x = c.arg(0);
  if (x.kind != Kind::kList) return index_tensor(c, x, c.arg(1));
  int64_t i = c.int_of(c.arg(1));
  if (i < 0) i += static_cast<int64_t>(x.items.size());
  if (i < 0 || i >= static_cast<int64_t>(x.items.size())) c.fail("index out of range");
  return x.items[i];
}

/// x.mean(dim, keepdim) / torch.mean: ReduceMean (axes an attribute up to opset 17).
Value mean(const Context& c) {
  const Value& dim = c.arg(1, "dim");
  const Value& keep = c.arg(2, "keepdim");
  std::vector<Attr> attrs = {{"keepdims", int64_t{keep.kind == Kind::kNone ? 0 : c.int_of(keep)}}};
  if (dim.kind != Kind::kNone) attrs.push_back({"axes", c.ints_of(dim)});
  return Value::tensor(c.g().op("ReduceMean", {c.tensor(c.arg(0))}, c.hint(), attrs));
}

/// x.sum(dim, keepdim) / torch.sum: ReduceSum (axes an input from opset 13).
Value sum(const Context& c) {
  if (c.arg(3, "dtype").kind != Kind::kNone) c.fail("sum with a dtype has no ONNX form here");
  const Value& dim = c.arg(1, "dim");
  const Value& keep = c.arg(2, "keepdim");
  std::vector<std::string> inputs = {c.tensor(c.arg(0))};
  if (dim.kind != Kind::kNone) inputs.push_back(c.g().ints(c.hint() + "_axes", c.ints_of(dim)));
  return Value::tensor(
      c.g().op("ReduceSum", inputs, c.hint(), {{"keepdims", int64_t{keep.kind == Kind::kNone ? 0 : c.int_of(keep)}}}));
}

Value softmax_rule(const Context& c) { return softmax(c, c.int_of(c.arg(1, "dim"))); }

Value transpose(const Context& c) {
  int64_t rank = c.rank_of_arg(0);
  std::vector<int64_t> perm(rank);
  for (int64_t i = 0; i < rank; ++i) perm[i] = i;
  int64_t a = c.int_of(c.arg(1, "dim0")), b = c.int_of(c.arg(2, "dim1"));
  std::swap(perm[(a + rank) % rank], perm[(b + rank) % rank]);
  return unary(c, "Transpose", {{"perm", perm}});
}

Value permute(const Context& c) {
  std::vector<int64_t> perm;
  if (c.num_args() == 2) {
    perm = c.ints_of(c.arg(1, "dims"));
  } else {
    for (size_t i = 1; i < c.num_args(); ++i) perm.push_back(c.int_of(c.arg(i)));
  }
  return unary(c, "Transpose", {{"perm", perm}});
}

Value relu6(const Context& c) { return clip(c, 0, 6); }
Value hardtanh(const Context& c) {
  const Value& lo = c.arg(1, "min_val");
  const Value& hi = c.arg(2, "max_val");
  return clip(c, lo.kind == Kind::kNone ? -1.0 : c.double_of(lo), hi.kind == Kind::kNone ? 1.0 : c.double_of(hi));
}
Value hardswish_rule(const Context& c) { return Value::tensor(hardswish(c, c.tensor(c.arg(0)))); }
Value hardsigmoid_rule(const Context& c) { return Value::tensor(hardsigmoid(c, c.tensor(c.arg(0)))); }

std::vector<int64_t> pool_ints(const Context& c, const Value& v, size_t n, int64_t fallback) {
  if (v.kind == Kind::kNone) return std::vector<int64_t>(n, fallback);
  std::vector<int64_t> out = c.ints_of(v);
  if (out.size() == 1 && n > 1) out.assign(n, out[0]);
  if (out.empty()) return std::vector<int64_t>(n, fallback);
  return out;
}

/// F.max_poolNd(x, kernel_size, stride, padding, dilation, ceil_mode).
Value max_pool(const Context& c) {
  size_t n = static_cast<size_t>(c.rank_of_arg(0)) - 2;
  std::vector<int64_t> kernel = pool_ints(c, c.arg(1, "kernel_size"), n, 1);
  std::vector<int64_t> stride = pool_ints(c, c.arg(2, "stride"), n, 0);
  if (stride == std::vector<int64_t>(n, 0)) stride = kernel;
  const Value& ceil = c.arg(5, "ceil_mode");
  return unary(c, "MaxPool",
               {{"kernel_shape", kernel},
                {"strides", stride},
                {"pads", both_sides(pool_ints(c, c.arg(3, "padding"), n, 0))},
                {"dilations", pool_ints(c, c.arg(4, "dilation"), n, 1)},
                {"ceil_mode", int64_t{ceil.kind == Kind::kNone ? 0 : c.int_of(ceil)}}});
}

/// F.avg_poolNd(x, kernel_size, stride, padding, ceil_mode, count_include_pad).
Value avg_pool(const Context& c) {
  size_t n = static_cast<size_t>(c.rank_of_arg(0)) - 2;
  std::vector<int64_t> kernel = pool_ints(c, c.arg(1, "kernel_size"), n, 1);
  std::vector<int64_t> stride = pool_ints(c, c.arg(2, "stride"), n, 0);
  if (stride == std::vector<int64_t>(n, 0)) stride = kernel;
  const Value& ceil = c.arg(4, "ceil_mode");
  const Value& include = c.arg(5, "count_include_pad");
  if (c.arg(6, "divisor_override").kind != Kind::kNone) c.fail("avg_pool with divisor_override has no ONNX form");
  return unary(c, "AveragePool",
               {{"kernel_shape", kernel},
                {"strides", stride},
                {"pads", both_sides(pool_ints(c, c.arg(3, "padding"), n, 0))},
                {"ceil_mode", int64_t{ceil.kind == Kind::kNone ? 0 : c.int_of(ceil)}},
                {"count_include_pad", int64_t{include.kind == Kind::kNone ? 1 : c.int_of(include)}}});
}

}  // namespace

std::vector<int64_t> both_sides(std::vector<int64_t> pads) {
  size_t n = pads.size();
  for (size_t i = 0; i < n; ++i) pads.push_back(pads[i]);
  return pads;
}

Value flatten(const Context& c, int64_t start, int64_t end) {
  int64_t rank = c.rank_of_arg(0);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  std::string x = c.tensor(c.arg(0));
  if (start == 1 && end == rank - 1) return Value::tensor(c.g().op("Flatten", {x}, c.hint(), {{"axis", int64_t{1}}}));
  std::vector<int64_t> shape(start, 0);
  shape.push_back(-1);
  const std::vector<int64_t>& in = c.shape_of_arg(0);
  shape.insert(shape.end(), in.begin() + end + 1, in.end());
  return Value::tensor(c.g().op("Reshape", {x, c.g().ints(c.hint() + "_shape", shape)}, c.hint()));
}

Value unary(const Context& c, const std::string& op_type, const std::vector<Attr>& attrs) {
  return Value::tensor(c.g().op(op_type, {c.tensor(c.arg(0))}, c.hint(), attrs));
}

Value softmax(const Context& c, int64_t dim) {
  int64_t rank = c.rank_of_arg(0);
  if (dim < 0) dim += rank;
  if (c.arg(0).kind != Value::Kind::kDequantized) return unary(c, "Softmax", {{"axis", dim}});
  // exp(x - max) / sum, not the Softmax op: ONNX Runtime's QDQ fusion turns
  // DequantizeLinear -> Softmax -> QuantizeLinear into QLinearSoftmax, whose
  // table-based exponentials were measured up to 50 output steps away from
  // the float softmax the reference model computes (tests/oracle's
  // fixed_qparams_ops); these ops it leaves in float.
  std::string x = c.tensor(c.arg(0)), hint = c.hint();
  std::vector<Attr> keep = {{"axes", std::vector<int64_t>{dim}}, {"keepdims", int64_t{1}}};
  std::string shifted = c.g().op("Sub", {x, c.g().op("ReduceMax", {x}, hint + "_max", keep)}, hint + "_shifted");
  std::string e = c.g().op("Exp", {shifted}, hint + "_exp");
  std::string sum =
      c.g().op("ReduceSum", {e, c.g().ints(hint + "_axes", {dim})}, hint + "_sum", {{"keepdims", int64_t{1}}});
  return Value::tensor(c.g().op("Div", {e, sum}, hint));
}

namespace {

/// The qparams node `user` quantizes with, when it is a quantize_per_tensor of
/// constants (get_attr scale and zero point).
std::optional<std::pair<double, int64_t>> requantized_with(const Context& c, const ir::Node& user) {
  if (user.op() != ir::Opcode::kCallFunction || user.target() != ir::op::kQuantizePerTensor) return std::nullopt;
  if (user.args().size() < 3 || !user.args()[1].is_node() || !user.args()[2].is_node()) return std::nullopt;
  const ir::Node* scale = user.args()[1].to_node();
  const ir::Node* zero_point = user.args()[2].to_node();
  if (scale->op() != ir::Opcode::kGetAttr || zero_point->op() != ir::Opcode::kGetAttr) return std::nullopt;
  return std::make_pair(c.gm().get_attr(scale->target()).toTensor().item<double>(),
                        c.gm().get_attr(zero_point->target()).toTensor().item<int64_t>());
}

/// ATen's quantize of `value` with `scale` and `zero_point`, clamped to `q`'s integer range.
int64_t quantized_bound(double value, const QParams& q, double scale, int64_t zero_point) {
  bool is_unsigned = q.zero_point_value.scalar_type() == at::kByte;
  int64_t lo = is_unsigned ? 0 : -128, hi = is_unsigned ? 255 : 127;
  if (std::isinf(value)) return value < 0 ? lo : hi;
  float inv_scale = 1.0f / static_cast<float>(scale);
  auto v = static_cast<int64_t>(std::nearbyint(static_cast<float>(value) * inv_scale)) + zero_point;
  return std::min(hi, std::max(lo, v));
}

}  // namespace

Value clip(const Context& c, double min, double max) {
  const Value& x = c.arg(0);
  const auto& users = c.node().users();
  if (x.kind == Kind::kDequantized && x.qparams.axis < 0 && x.qparams.scale_value.defined() && users.size() == 1) {
    auto next = requantized_with(c, *users[0]);
    double scale = x.qparams.scale_value.item<double>();
    int64_t zero_point = x.qparams.zero_point_value.item<int64_t>();
    if (next && static_cast<float>(next->first) == static_cast<float>(scale) && next->second == zero_point) {
      at::Tensor bounds[2];
      for (int i = 0; i < 2; ++i) {
        bounds[i] = at::scalar_tensor(quantized_bound(i == 0 ? min : max, x.qparams, scale, zero_point),
                                      x.qparams.zero_point_value.scalar_type());
      }
      std::string lo = c.g().initializer(c.hint() + "_min", bounds[0]);
      std::string hi = c.g().initializer(c.hint() + "_max", bounds[1]);
      return Value::quantized(c.g().op("Clip", {x.name, lo, hi}, c.hint()), x.qparams);
    }
  }
  std::string lo = c.g().initializer(c.hint() + "_min", at::scalar_tensor(min, at::kFloat));
  std::string hi = c.g().initializer(c.hint() + "_max", at::scalar_tensor(max, at::kFloat));
  return Value::tensor(c.g().op("Clip", {c.tensor(x), lo, hi}, c.hint()));
}

std::string hardsigmoid(const Context& c, const std::string& x) {
  return c.g().op("HardSigmoid", {x}, c.hint(), {{"alpha", 1.0f / 6.0f}, {"beta", 0.5f}});
}

std::string gelu(const Context& c, const std::string& x) {
  std::string hint = c.hint();
  auto scalar = [&](const char* name, float v) {
    return c.g().initializer(hint + name, at::scalar_tensor(v, at::kFloat));
  };
  std::string erf =
      c.g().op("Erf", {c.g().op("Div", {x, scalar("_sqrt2", 1.4142135623730951f)}, hint + "_scaled")}, hint + "_erf");
  std::string one_plus = c.g().op("Add", {erf, scalar("_one", 1.0f)}, hint + "_one_plus");
  return c.g().op("Mul", {c.g().op("Mul", {x, one_plus}, hint + "_x_times"), scalar("_half", 0.5f)}, hint + "_gelu");
}

std::string hardswish(const Context& c, const std::string& x) {
  if (c.g().opset() >= 14) return c.g().op("HardSwish", {x}, c.hint());
  return c.g().op("Mul", {x, hardsigmoid(c, x)}, c.hint());
}

namespace {

/// PyTorch's adaptive average over one dim as an [out, in] matrix: row i
/// averages inputs floor(i * in / out) to ceil((i + 1) * in / out).
at::Tensor averaging_matrix(int64_t in, int64_t out) {
  at::Tensor m = at::zeros({out, in});
  for (int64_t i = 0; i < out; ++i) {
    int64_t start = i * in / out, end = ((i + 1) * in + out - 1) / out;
    m[i].narrow(0, start, end - start).fill_(1.0 / static_cast<double>(end - start));
  }
  return m;
}

/// An adaptive average whose windows differ in size (the output does not
/// divide the input), over the last one or two dims: x P_w^T, then P_h x.
Value uneven_adaptive_avg_pool(const Context& c, const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  size_t n = out.size();
  if (n > 2) c.fail("adaptive_avg_pool3d whose output size does not divide the input has no ONNX form here");
  const std::string hint = c.hint();
  at::Tensor last = averaging_matrix(in.back(), out.back()).t().contiguous();
  std::string y = c.g().op("MatMul", {c.tensor(c.arg(0)), c.constant(hint + "_columns", last)}, hint + "_columns");
  if (n == 2) {
    at::Tensor rows = averaging_matrix(in[in.size() - 2], out[0]);
    y = c.g().op("MatMul", {c.constant(hint + "_rows", rows), y}, hint);
  }
  return Value::tensor(y);
}

}  // namespace

/// F.adaptive_avg_poolNd(x, output_size): GlobalAveragePool for size 1,
/// AveragePool with the kernel the example run's sizes give when they
/// divide, else averaging matrices.
Value adaptive_avg_pool(const Context& c, std::vector<int64_t> out) {
  const std::vector<int64_t>& in = c.shape_of_arg(0);
  size_t n = in.size() - 2;
  if (out.size() == 1 && n > 1) out.assign(n, out[0]);
  if (std::all_of(out.begin(), out.end(), [](int64_t v) { return v == 1; })) return unary(c, "GlobalAveragePool");
  std::vector<int64_t> kernel;
  for (size_t i = 0; i < n; ++i) {
    if (out[i] <= 0) c.fail("adaptive_avg_pool to an empty output");
    if (in[i + 2] % out[i] != 0) return uneven_adaptive_avg_pool(c, in, out);
    kernel.push_back(in[i + 2] / out[i]);
  }
  return unary(c, "AveragePool", {{"kernel_shape", kernel}, {"strides", kernel}});
}

const std::map<std::string, Rule>& function_rules() {
  static const std::map<std::string, Rule> kRules = [] {
    std::map<std::string, Rule> rules = {
        {ir::op::kQuantizePerTensor, [](const Context& c) { return quantize(c, false); }},
        {ir::op::kQuantizePerChannel, [](const Context& c) { return quantize(c, true); }},
        {ir::op::kQuantizePerTensorDynamic, quantize_dynamic},
        {"torch.dequantize", dequantize},
        {"torch.add", binary("Add")},
        {"operator.add", binary("Add")},
        {"operator.iadd", binary("Add")},
        {"torch.sub", binary("Sub")},
        {"operator.sub", binary("Sub")},
        {"torch.mul", binary("Mul")},
        {"operator.mul", binary("Mul")},
        {"operator.imul", binary("Mul")},
        {"torch.div", binary("Div")},
        {"operator.truediv", binary("Div")},
        {"torch.matmul", binary("MatMul")},
        {"torch.bmm", binary("MatMul")},
        {"operator.matmul", binary("MatMul")},
        {"torch.cat", concat},
        {"torch.concat", concat},
        {"torch.flatten", flatten_rule},
        {"torch.reshape", reshape},
        {"torch.mean", mean},
        {"torch.sum", sum},
        {"torch.transpose", transpose},
        {"torch.permute", permute},
        {"torch.softmax", softmax_rule},
        {"torch.nn.functional.softmax", softmax_rule},
        {"operator.getitem", getitem},
        {"operator.mod", binary("Mod")},
        {"operator.floordiv", binary("FloorDiv")},
        {"operator.gt", binary("Greater")},
        {"torch.gt", binary("Greater")},
        {"operator.lt", binary("Less")},
        {"torch.lt", binary("Less")},
        {"operator.ge", binary("GreaterOrEqual")},
        {"torch.ge", binary("GreaterOrEqual")},
        {"operator.le", binary("LessOrEqual")},
        {"torch.le", binary("LessOrEqual")},
        {"operator.eq", binary("Equal")},
        {"torch.eq", binary("Equal")},
        {"operator.ne", binary("NotEqual")},
        {"torch.ne", binary("NotEqual")},
        {"torch._assert", assert_rule},
        {ir::op::kTorchRelu, unary_rule("Relu")},
        {ir::op::kFunctionalRelu, unary_rule("Relu")},
        {"torch.relu_", unary_rule("Relu")},
        {"torch.nn.functional.relu6", relu6},
        {"torch.nn.functional.hardtanh", hardtanh},
        {"torch.sigmoid", unary_rule("Sigmoid")},
        {"torch.nn.functional.sigmoid", unary_rule("Sigmoid")},
        {"torch.tanh", unary_rule("Tanh")},
        {"torch.nn.functional.tanh", unary_rule("Tanh")},
        {"torch.nn.functional.hardswish", hardswish_rule},
        {"torch.nn.functional.hardsigmoid", hardsigmoid_rule},
        {"torch.nn.functional.dropout", pass_through},
        {"torch.nn.functional.max_pool1d", max_pool},
        {"torch.nn.functional.max_pool2d", max_pool},
        {"torch.nn.functional.max_pool3d", max_pool},
        {"torch.max_pool1d", max_pool},
        {"torch.max_pool2d", max_pool},
        {"torch.max_pool3d", max_pool},
        {"torch.nn.functional.avg_pool1d", avg_pool},
        {"torch.nn.functional.avg_pool2d", avg_pool},
        {"torch.nn.functional.avg_pool3d", avg_pool},
        {"torch.nn.functional.adaptive_avg_pool1d",
         [](const Context& c) { return adaptive_avg_pool(c, c.ints_of(c.arg(1, "output_size"))); }},
        {"torch.nn.functional.adaptive_avg_pool2d",
         [](const Context& c) { return adaptive_avg_pool(c, c.ints_of(c.arg(1, "output_size"))); }},
        {"torch.nn.functional.adaptive_avg_pool3d",
         [](const Context& c) { return adaptive_avg_pool(c, c.ints_of(c.arg(1, "output_size"))); }},
    };
    rules.insert(functional_rules().begin(), functional_rules().end());
    rules.insert(shuffle_rules().begin(), shuffle_rules().end());
    return rules;
  }();
  return kRules;
}

const std::map<std::string, Rule>& method_rules() {
  static const std::map<std::string, Rule> kRules = [] {
    std::map<std::string, Rule> rules = {
        {ir::op::kDequantize, dequantize},
        {ir::op::kTo, to},
        {"add", binary("Add")},
        {"add_", binary("Add")},
        {"sub", binary("Sub")},
        {"mul", binary("Mul")},
        {"mul_", binary("Mul")},
        {"div", binary("Div")},
        {"matmul", binary("MatMul")},
        {"flatten", flatten_rule},
        {"view", reshape},
        {"reshape", reshape},
        {"size", size},
        {"mean", mean},
        {"sum", sum},
        {"transpose", transpose},
        {"permute", permute},
        {"softmax", softmax_rule},
        {"relu", unary_rule("Relu")},
        {"relu_", unary_rule("Relu")},
        {"sigmoid", unary_rule("Sigmoid")},
        {"tanh", unary_rule("Tanh")},
        {"contiguous", pass_through},
        {"detach", pass_through},
        {"clone", pass_through},
    };
    rules.insert(functional_method_rules().begin(), functional_method_rules().end());
    rules.insert(shuffle_method_rules().begin(), shuffle_method_rules().end());
    return rules;
  }();
  return kRules;
}

}  // namespace qfx::io::onnx_export
