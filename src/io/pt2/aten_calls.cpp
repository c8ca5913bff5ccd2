// Special forms of ATen nodes (aten_calls.h), read by argument name.

#include "aten_calls.h"

#include "qfx/ir/aten_ops.h"

#include <cmath>
#include <set>
#include <limits>

namespace qfx::io::pt2 {
namespace {

ir::Argument whole() { return ir::Argument::slice({}, {}, {}); }

bool constant_is(const NamedArgs& a, const std::string& name, const std::function<bool(const c10::IValue&)>& test) {
  auto c = a.constant(name);
  return c && test(*c);
}

/// The index of x[..., index] with `index` at dimension `dim` (a constant, not negative).
ir::Argument::Items index_at(GraphBuilder& b, const NamedArgs& a, const ir::Argument& index, const std::string& op) {
  auto dim = a.constant("dim");
  if (!dim || !dim->isInt() || dim->toInt() < 0) b.fail(op + " with a dimension that is not a constant >= 0");
  ir::Argument::Items parts(static_cast<size_t>(dim->toInt()), whole());
  parts.push_back(index);
  return parts;
}

ir::Argument::Items slice_index(GraphBuilder& b, const NamedArgs& a) {
  auto bound = [&](const char* name, int64_t trivial) -> ir::Argument {
    if (constant_is(a, name, [&](const c10::IValue& v) { return v.isNone() || (v.isInt() && v.toInt() == trivial); })) {
      return {};
    }
    return a.arg(name);
  };
  ir::Argument index =
      ir::Argument::slice(bound("start", 0), bound("end", std::numeric_limits<int64_t>::max()), bound("step", 1));
  return index_at(b, a, index, "aten::slice");
}

ir::Argument key_of(const ir::Argument::Items& parts) {
  return parts.size() == 1 ? parts[0] : ir::Argument::tuple(parts);
}

ir::Node* tensor_index(GraphBuilder& b, const NamedArgs& a) {
  // aten::index(self, [i, None, j]) => x[i, :, j]; x[i] for one index
  ir::Argument base = a.arg("self");
  ir::Argument::Items parts;
  ir::Argument indices = a.arg("indices");
  for (const ir::Argument& item : indices.items()) parts.push_back(item.is_none() ? whole() : item);
  return b.getitem(base, key_of(parts));
}

ir::Node* interpolate(GraphBuilder& b, const NamedArgs& a, const ir::UpsampleMapping& up) {
  // F.interpolate(input, size=..., scale_factor=..., mode=..., align_corners=...)
  ir::Kwargs kwargs = {
      {"size", a.arg("output_size")}, {"scale_factor", a.arg("scale_factors")}, {"mode", std::string(up.mode)}};
  if (up.has_align_corners) kwargs.emplace_back("align_corners", a.arg("align_corners"));
  return b.call(ir::Opcode::kCallFunction, "torch.nn.functional.interpolate", {a.arg("input")}, kwargs);
}

/// softmax(q @ k^T * scale + mask) @ v, PyTorch's math form of the op (its
/// dropout and causal mask left out: an eval-mode program without them).
ir::Node* attention(GraphBuilder& b, const NamedArgs& a) {
  if (!constant_is(a, "dropout_p", [](const c10::IValue& v) { return v.isNone() || v.toDouble() == 0.0; }) ||
      constant_is(a, "is_causal", [](const c10::IValue& v) { return v.isBool() && v.toBool(); })) {
    b.fail("scaled_dot_product_attention with dropout or is_causal=True, which qfx does not read yet");
  }
  double scale = 0;
  if (auto given = a.constant("scale"); given && !given->isNone()) {
    scale = given->toDouble();
  } else if (auto e = a.last_size("query")) {
    scale = 1.0 / std::sqrt(static_cast<double>(*e));
  } else {
    b.fail("scaled_dot_product_attention whose head size is dynamic");
  }
  auto fn = [&](const char* target, std::vector<ir::Argument> args) {
    return b.call(ir::Opcode::kCallFunction, target, std::move(args));
  };
  ir::Node* keys = b.call(ir::Opcode::kCallMethod, "transpose", {a.arg("key"), -2, -1});
  ir::Node* scores = fn("operator.mul", {fn("torch.matmul", {a.arg("query"), keys}), scale});
  auto mask = a.constant("attn_mask");
  if (mask && mask->isNone()) {         // no mask
  } else if (a.is_bool("attn_mask")) {  // True: attend. The lowest float, not -inf as PyTorch's: the same
    // weights but for a row masked whole (0 here, NaN there), and a literal TorchScript can read
    ir::Node* masked = fn("torch.ops.aten.logical_not", {a.arg("attn_mask")});
    scores =
        fn("torch.ops.aten.masked_fill", {scores, masked, static_cast<double>(std::numeric_limits<float>::lowest())});
  } else {
    scores = fn("operator.add", {scores, a.arg("attn_mask")});
  }
  ir::Node* weights = fn("torch.nn.functional.softmax", {scores, -1});
  return fn("torch.matmul", {weights, a.arg("value")});
}

/// F.convNd / F.conv_transposeNd with every argument, as a traced-through nn.ConvNd subclass's
/// _conv_forward passes them (and as the TorchScript reader reads aten::_convolution); export
/// leaves out those at their default.
ir::Node* functional_conv(GraphBuilder& b, const std::string& op, const NamedArgs& a) {
  static const std::vector<std::string> kConv = {"input", "weight", "bias", "stride", "padding", "dilation", "groups"};
  static const std::vector<std::string> kTranspose = {"input",   "weight",         "bias",   "stride",
                                                      "padding", "output_padding", "groups", "dilation"};
  std::vector<ir::Argument> args;
  for (const std::string& name : op.find("transpose") != std::string::npos ? kTranspose : kConv) {
    args.push_back(a.arg(name));
  }
  return b.call(ir::Opcode::kCallFunction, "torch.nn.functional." + op.substr(op.find("::") + 2), std::move(args));
}

/// `x.to(dtype)` for aten.to.dtype_layout on the CPU (the overload torch.export records for `x.to(dtype)`).
ir::Node* to_dtype(GraphBuilder& b, const NamedArgs& a) {
  auto cpu = [](const c10::IValue& v) { return v.isNone() || (v.isDevice() && v.toDevice().is_cpu()); };
  auto no = [](const c10::IValue& v) { return v.isNone() || (v.isBool() && !v.toBool()); };
  auto strided = [](const c10::IValue& v) { return v.isNone() || (v.isInt() && v.toInt() == 0); };
  if (!constant_is(a, "device", cpu) || !constant_is(a, "pin_memory", no) || !constant_is(a, "layout", strided) ||
      !constant_is(a, "copy", no) ||
      !constant_is(a, "memory_format", [](const c10::IValue& v) { return v.isNone(); })) {
    return nullptr;  // the table row says what it cannot express
  }
  return b.call(ir::Opcode::kCallMethod, "to", {a.arg("self"), a.arg("dtype")});
}

}  // namespace

ir::Argument::Items view_index(GraphBuilder& b, const std::string& op, const NamedArgs& a) {
  return op == "aten::slice" ? slice_index(b, a) : index_at(b, a, a.arg("index"), op);
}

bool is_newer_op(const std::string& op) { return op == "aten::scaled_dot_product_attention" || op == "aten::sym_size"; }

ir::Node* call_special(GraphBuilder& b, const std::string& op, const NamedArgs& a) {
  if (op == "aten::sym_size") return b.call(ir::Opcode::kCallMethod, "size", {a.arg("self"), a.arg("dim")});
  if (op == "aten::slice" || op == "aten::select") {
    ir::Argument key = key_of(view_index(b, op, a));  // its values before self's, as before
    return b.getitem(a.arg("self"), key);
  }
  if (op == "aten::index") return tensor_index(b, a);
  if (const ir::UpsampleMapping* up = ir::find_upsample_mapping(op)) return interpolate(b, a, *up);
  if (op == "aten::scaled_dot_product_attention") return attention(b, a);
  static const std::set<std::string> kConvs = {"aten::conv1d",           "aten::conv2d",
                                               "aten::conv3d",           "aten::conv_transpose1d",
                                               "aten::conv_transpose2d", "aten::conv_transpose3d"};
  if (kConvs.count(op) != 0) return functional_conv(b, op, a);
  if (op == "aten::to" && a.has("layout")) return to_dtype(b, a);
  return nullptr;
}

ir::Node* call_torch_op(GraphBuilder& b, const std::string& op, const std::vector<c10::Argument>& schema,
                        const std::vector<OpInput>& inputs) {
  return b.call_op("torch.ops.aten." + op.substr(op.find("::") + 2), schema, inputs);
}

}  // namespace qfx::io::pt2
