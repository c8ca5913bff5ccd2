// The ONNX forms of Python's and torch's arithmetic and comparison operators:
// folded when both operands are numbers known at export time, else the ONNX
// op with ATen's rounding.

#include "onnx_rules.h"

#include "qfx/ir/op_names.h"

#include <ATen/ATen.h>

#include <cmath>
#include <optional>

namespace qfx::io::onnx_export {
namespace {

using Kind = Value::Kind;

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

}  // namespace

const std::map<std::string, Rule>& arithmetic_rules() {
  static const std::map<std::string, Rule> kRules = {
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
  };
  return kRules;
}

const std::map<std::string, Rule>& arithmetic_method_rules() {
  static const std::map<std::string, Rule> kRules = {
      {"add", binary("Add")},  {"add_", binary("Add")}, {"sub", binary("Sub")},       {"mul", binary("Mul")},
      {"mul_", binary("Mul")}, {"div", binary("Div")},  {"matmul", binary("MatMul")},
  };
  return kRules;
}

}  // namespace qfx::io::onnx_export
