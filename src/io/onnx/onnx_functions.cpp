// The ONNX forms of call_function targets and call_method names: one row
// per FX target; the tables of onnx_quantize_rules.cpp (quantize,
// dequantize, casts), onnx_arithmetic.cpp (Python's and torch's operators),
// onnx_functional.cpp and onnx_shuffles.cpp join them.

#include "onnx_rules.h"

#include "qfx/ir/op_names.h"

#include <ATen/ATen.h>

#include <cmath>
#include <optional>

namespace qfx::io::onnx_export {
namespace {

using Kind = Value::Kind;

Value pass_through(const Context& c) { return c.arg(0); }

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
    for (const auto* more : {&quantize_rules(), &arithmetic_rules(), &functional_rules(), &shuffle_rules()}) {
      rules.insert(more->begin(), more->end());
    }
    return rules;
  }();
  return kRules;
}

const std::map<std::string, Rule>& method_rules() {
  static const std::map<std::string, Rule> kRules = [] {
    std::map<std::string, Rule> rules = {
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
    for (const auto* more :
         {&quantize_method_rules(), &arithmetic_method_rules(), &functional_method_rules(), &shuffle_method_rules()}) {
      rules.insert(more->begin(), more->end());
    }
    return rules;
  }();
  return kRules;
}

}  // namespace qfx::io::onnx_export
