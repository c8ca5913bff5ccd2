// Quantized modules as TorchScript: the one `torch.ops.quantized` call each
// makes; a pointwise convolution on onednn as quantized::linear over its
// channels (nn::pointwise_linear_weight says why).

#include "module_script.h"

#include "qfx/nn/quantized.h"

#include <regex>

namespace qfx::io::detail {
namespace {

/// A module's tensor or packed attribute as `self.<path>_<name>`; a number, bool or None as a literal.
std::string attribute_value(const c10::IValue& value, const std::string& hint, ScriptAttrs& attrs) {
  bool literal = value.isDouble() || value.isInt() || value.isBool() || value.isNone() || value.isIntList();
  return literal ? script_literal(value) : attrs.add(hint, value);
}

}  // namespace

std::optional<PointwiseLinear> pointwise_linear(const std::string& conv_op, const c10::IValue& packed) {
  static const std::regex kConv(R"((?:quantized::|torch\.ops\.quantized\.)conv([123])d(_relu)?)");
  std::smatch m;
  if (!std::regex_match(conv_op, m, kConv)) return std::nullopt;
  std::optional<c10::IValue> weight = nn::pointwise_linear_weight(packed);
  if (!weight) return std::nullopt;
  int64_t rank = std::stoi(m[1].str()) + 2;
  PointwiseLinear out{
      m[2].matched ? "torch.ops.quantized.linear_relu" : "torch.ops.quantized.linear", {0}, {0, rank - 1}, *weight};
  for (int64_t d = 2; d < rank; ++d) out.channels_last.push_back(d), out.channels_first.push_back(d - 1);
  out.channels_last.push_back(1);
  return out;
}

std::string pointwise_linear_expression(const PointwiseLinear& p, const std::string& input, const std::string& weight,
                                        const std::string& scale, const std::string& zero_point) {
  return p.op + "(" + input + ".permute(" + script_literal(p.channels_last) + "), " + weight + ", " + scale + ", " +
         zero_point + ").permute(" + script_literal(p.channels_first) + ")";
}

std::string quantized_expression(const nn::QuantizedModuleImpl& q, const std::string& path,
                                 const std::vector<std::string>& inputs, ScriptAttrs& attrs) {
  auto hint = [&](const std::string& name) { return path.empty() ? name : path + "." + name; };
  const nn::QuantizedCall& call = q.call();
  std::string input = inputs.at(0);
  for (const auto& [name, value] : q.attributes()) {
    if (name == "padding_mode" && value.toStringRef() != "zeros") {
      input = "torch.pad(" + input + ", " + script_literal(q.attribute("_reversed_padding_repeated_twice")) + ", \"" +
              value.toStringRef() + "\")";
    }
  }
  if (call.op.empty()) return input;
  if (attrs.pointwise_as_linear() && q.type_name().find(".Conv") != std::string::npos) {  // no padding to apply
    if (auto p = pointwise_linear(call.op, q.attribute("_packed_params"))) {
      return pointwise_linear_expression(*p, input, attrs.add(hint("_packed_linear_params"), p->weight),
                                         attribute_value(q.attribute("scale"), hint("scale"), attrs),
                                         attribute_value(q.attribute("zero_point"), hint("zero_point"), attrs));
    }
  }
  std::string args;
  for (const nn::CallArg& a : call.args) {
    std::string arg;
    if (a.kind == nn::CallArg::Kind::kConstant) {
      arg = script_literal(a.constant);
    } else if (a.kind != nn::CallArg::Kind::kAttribute) {
      arg = a.is_first_input() ? input : a.input < inputs.size() ? inputs[a.input] : "None";
    } else {
      arg = attribute_value(q.attribute(a.attribute), hint(a.attribute), attrs);
    }
    args += (args.empty() ? "" : ", ") + arg;
  }
  std::string op = call.op;
  return "torch.ops." + op.replace(op.find("::"), 2, ".") + "(" + args + ")";
}

}  // namespace qfx::io::detail
