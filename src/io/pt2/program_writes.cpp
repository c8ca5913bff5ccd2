// ProgramReader's assignments: `mask[a:b, c:d] = v`, which export records as
// slices of mask and an in-place fill_ (or copy_) of the last one, read as
// FX's `operator.setitem(mask, (slice(a, b), slice(c, d)), v)`.

#include "arguments.h"
#include "reader.h"

namespace qfx::io::pt2 {

using json = nlohmann::json;

namespace {

bool is_view_op(const std::string& op) { return op == "aten::slice" || op == "aten::select"; }
bool is_write_op(const std::string& op) { return op == "aten::fill_" || op == "aten::copy_"; }

}  // namespace

bool ProgramReader::written_through(const std::string& value) const {
  auto readers = readers_.find(value);
  if (readers == readers_.end() || readers->second.empty()) return false;
  const json& nodes = graph_.at("nodes");
  for (const Reader& reader : readers->second) {
    if (reader.node == SIZE_MAX || reader.input != "self") return false;
    const json& node = nodes[reader.node];
    std::string op = aten_name(node.at("target").get<std::string>()).name;
    if (is_write_op(op)) continue;
    if (!is_view_op(op) || node.at("outputs").size() != 1) return false;
    auto made = value_names(node.at("outputs")[0]);
    if (made.size() != 1 || !written_through(made[0])) return false;
  }
  return true;
}

bool ProgramReader::read_assignment(const json& node, const std::string& op, const NamedArgs& args) {
  const json* self = given(node, "self");
  if (self == nullptr || argument_kind(*self) != "as_tensor") return false;
  const std::string source = self->at("as_tensor").at("name").get<std::string>();
  auto view = written_views_.find(source);
  if (is_view_op(op)) {
    const std::string made = value_names(node.at("outputs").at(0)).at(0);
    if (!written_through(made)) return false;
    ir::Argument::Items index = view_index(b_, op, args);
    if (view == written_views_.end()) {
      written_views_[made] = {source, std::move(index)};
      return true;
    }
    WrittenView merged = view->second;
    if (!merge_index(merged.index, index)) fail("an assignment through an index qfx cannot merge into one");
    written_views_[made] = std::move(merged);
    return true;
  }
  if (!is_write_op(op) || view == written_views_.end()) return false;
  for (const json& output : node.at("outputs")) {
    for (const std::string& name : value_names(output)) {
      if (readers_.count(name) != 0) fail(op + " whose result is read (an in-place write qfx cannot express)");
    }
  }
  const WrittenView& target = view->second;
  if (!values_[target.base].state.empty())
    fail(op + " writes " + values_[target.base].state + ", a tensor of the model");
  ir::Argument key = target.index.size() == 1 ? target.index[0] : ir::Argument::tuple(target.index);
  ir::Argument assigned = args.arg(op == "aten::fill_" ? "value" : "src");
  // later reads of the base read the assignment, as the TorchScript reader's do (its value is the base)
  values_[target.base].arg =
      b_.call(ir::Opcode::kCallFunction, "operator.setitem", {value(target.base), key, assigned});
  return true;
}

}  // namespace qfx::io::pt2
