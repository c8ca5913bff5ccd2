// Indexing and assignment: aten::slice / select / index as FX's getitem,
// and `x[index] = v` (slices of x, then fill_ or copy_ on the view) as FX's
// operator.setitem, traced or scripted.

#include "script_reader.h"

#include "qfx/ir/op_names.h"

#include <limits>

namespace qfx::io::detail {
namespace {

ir::Argument full_slice() { return ir::Argument::slice({}, {}, {}); }

bool is_metadata_read(const torch::jit::Node& node) {
  return node.kind() == c10::prim::dtype || node.kind() == c10::prim::device;
}

bool is_view_op(const torch::jit::Node& node) {
  return node.kind() == c10::aten::slice || node.kind() == c10::aten::select;
}

}  // namespace

bool ScriptReader::written_through(const torch::jit::Value& view) {
  // a scripted `x[a:b] = 1.0` also reads the view's dtype and device (aten::tensor of the value)
  std::vector<torch::jit::Use> writes;
  for (const torch::jit::Use& use : view.uses()) {
    if (!is_metadata_read(*use.user)) writes.push_back(use);
  }
  if (writes.size() != 1 || writes[0].offset != 0) return false;
  const torch::jit::Node& user = *writes[0].user;
  if (user.kind() == c10::aten::fill_ || user.kind() == c10::aten::copy_) return true;
  return is_view_op(user) && written_through(*user.output());
}

ImportValue ScriptReader::view_of(const ImportValue& value, ir::Argument::Items index) {
  if (value.kind != ImportValue::Kind::kView) return ImportValue::of_view(value, std::move(index));
  ir::Argument::Items merged = value.index;
  if (!merge_index(merged, index)) walker_.fail("an assignment through an index qfx cannot merge into one");
  return ImportValue::of_view(value.items.at(0), std::move(merged));
}

ImportValue ScriptReader::tensor_index(const std::vector<ImportValue>& inputs) {
  // aten::index(self, [i, None, j]) => x[i, :, j]; x[i] for one index
  const ImportValue& list = inputs.at(1);
  if (list.kind != ImportValue::Kind::kList) walker_.fail("aten::index with indices that are not a list");
  ir::Argument base = to_argument(inputs[0]);  // first, as Python evaluates `x[i]`
  ir::Argument::Items parts;
  for (const ImportValue& item : list.items) {
    parts.push_back(item.is_static() && item.constant.isNone() ? full_slice() : to_argument(item));
  }
  ir::Argument index = parts.size() == 1 ? parts[0] : ir::Argument::tuple(parts);
  return ImportValue::of_node(b_.getitem(base, index));
}

ImportValue ScriptReader::setitem(const torch::jit::Node& node, const std::vector<ImportValue>& inputs) {
  // x[a:b, c:d] = v is traced as slices of x, then fill_ (or copy_) on the view: FX's operator.setitem
  std::string kind = node.kind().toQualString();
  const ImportValue& view = inputs.at(0);
  if (view.kind != ImportValue::Kind::kView || node.output()->hasUses()) {
    walker_.fail(kind + " other than `x[index] = value` (an in-place write qfx cannot express)");
  }
  ir::Node* base = to_argument(view.items.at(0)).to_node();
  const ir::Argument::Items& index = view.index;
  ir::Argument key = index.size() == 1 ? index[0] : ir::Argument::tuple(index);
  written_[base] = b_.call(ir::Opcode::kCallFunction, "operator.setitem", {base, key, to_argument(inputs.at(1))});
  return ImportValue::opaque();
}

ImportValue ScriptReader::slice_or_select(const torch::jit::Node& node, const std::vector<ImportValue>& inputs) {
  // aten::slice(self, dim, start, end, step) / aten::select(self, dim, index) => x[..., index]
  std::string kind = node.kind().toQualString();
  auto arg = [&](size_t i) { return to_argument(inputs.at(i)); };
  if (!inputs.at(1).is_static() || !inputs[1].constant.isInt()) walker_.fail(kind + ": non-constant dimension");
  int64_t dim = inputs[1].constant.toInt();
  if (dim < 0) walker_.fail(kind + " with a negative dimension");
  ir::Argument index;
  if (kind == "aten::select") {
    index = arg(2);
  } else {
    auto bound = [&](size_t i, int64_t trivial) -> ir::Argument {
      const ImportValue& v = inputs.at(i);
      if (v.is_static() && (v.constant.isNone() || (v.constant.isInt() && v.constant.toInt() == trivial))) return {};
      return arg(i);
    };
    index = ir::Argument::slice(bound(2, 0), bound(3, std::numeric_limits<int64_t>::max()), bound(4, 1));
    // x[:, :] is traced as slices over the whole range, which FX never records.
    if (index == full_slice()) return inputs[0];
  }
  ir::Argument::Items parts(static_cast<size_t>(dim), full_slice());
  parts.push_back(index);
  if (written_through(*node.output())) return view_of(inputs[0], parts);
  ir::Argument key = parts.size() == 1 ? parts[0] : ir::Argument::tuple(parts);
  return ImportValue::of_node(b_.getitem(arg(0), key));
}

ImportValue ScriptReader::tensor_metadata(const torch::jit::Node& node, const std::vector<ImportValue>& inputs) {
  // the dtype and device a scripted `x[a:b] = v` makes v's tensor with: v itself is assigned (new_tensor)
  if (inputs.at(0).kind == ImportValue::Kind::kView) return ImportValue::opaque();
  const char* field = node.kind() == c10::prim::dtype ? "dtype" : "device";
  return ImportValue::of_node(b_.call(ir::Opcode::kCallFunction, ir::op::kGetattr, {to_argument(inputs[0]), field}));
}

ImportValue ScriptReader::new_tensor(const torch::jit::Node& node, const std::vector<ImportValue>& inputs) {
  // aten::tensor(data, dtype, device, requires_grad): in a scripted `x[a:b] = v`, v made a tensor of x's
  // dtype and device, which FX records as the assignment of v itself
  const torch::jit::Node& dtype = *node.inputs().at(1)->node();
  const torch::jit::Node& device = *node.inputs().at(2)->node();
  if (dtype.kind() == c10::prim::dtype && device.kind() == c10::prim::device && dtype.input(0) == device.input(0) &&
      written_through(*dtype.input(0))) {
    return inputs.at(0);
  }
  ir::Kwargs kwargs = {{"dtype", to_argument(inputs.at(1), node.inputs()[1]->type())},
                       {"device", to_argument(inputs.at(2))}};
  if (inputs.at(3).is_static() && inputs[3].constant.isBool() && inputs[3].constant.toBool()) {
    kwargs.emplace_back("requires_grad", true);
  }
  return ImportValue::of_node(b_.call(ir::Opcode::kCallFunction, "torch.tensor", {to_argument(inputs[0])}, kwargs));
}

}  // namespace qfx::io::detail
