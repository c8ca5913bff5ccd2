// read_program: the exported program's nodes in order. A run of nodes that
// one call of a torch.nn leaf made (the same nn_module_stack key) becomes one
// call_module, the leaf built from the ATen ops of the run (as a TorchScript
// leaf is built from its forward's); any other node becomes the FX node of
// its ATen op. Values are looked up by name.

#include "program_reader.h"

#include "arguments.h"
#include "reader.h"

#include "qfx/ir/aten_ops.h"
#include "qfx/ir/graph.h"

#include <climits>

namespace qfx::io::pt2 {

using json = nlohmann::json;

void ProgramReader::read() {
  const json& nodes = graph_.at("nodes");
  std::string root = root_class(nodes);
  if (!root.empty()) b_.module().set_class_name(root.substr(root.rfind('.') + 1));
  for (const json& node : nodes) stacks_.push_back(module_stack(node));
  uses();
  inputs();
  for (size_t i = 0; i < nodes.size();) i = read_from(nodes, i);
  outputs();
  drop_unused_sizes();
}

/// x.size(d) nodes no node reads: sizes the program computed for a leaf's own use
/// (an LSTM's initial state), which its call does not take.
void ProgramReader::drop_unused_sizes() {
  std::vector<ir::Node*> unused;
  for (ir::Node* node : b_.module().graph().nodes()) {
    if (node->op() == ir::Opcode::kCallMethod && node->target() == "size" && node->users().empty()) {
      unused.push_back(node);
    }
  }
  for (ir::Node* node : unused) b_.module().graph().erase_node(node);
}

[[noreturn]] void ProgramReader::fail(const std::string& what) const {
  TORCH_CHECK(false, "cannot read '", archive_.path, "': ", where_.empty() ? "" : "node '" + where_ + "': ", what);
}

/// The last node that reads each value (graph outputs: after every node), and every reader.
void ProgramReader::uses() {
  const json& nodes = graph_.at("nodes");
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const json& input : nodes[i].at("inputs")) {
      for (const std::string& name : value_names(input.at("arg"))) {
        last_use_[name] = static_cast<int>(i);
        readers_[name].push_back({i, input.at("name").get<std::string>()});
      }
    }
  }
  for (const json& spec : archive_.program.at("graph_module").at("signature").at("output_specs")) {
    for (const auto& [kind, body] : spec.items()) {
      if (!body.is_null() && body.contains("arg")) {
        for (const std::string& name : value_names(body.at("arg"))) {
          last_use_[name] = INT_MAX;
          readers_[name].push_back({SIZE_MAX, ""});
        }
      }
    }
  }
}

void ProgramReader::inputs() {
  for (const json& spec : archive_.program.at("graph_module").at("signature").at("input_specs")) {
    std::string kind = argument_kind(spec);
    const json& body = spec.at(kind);
    if (kind == "user_input") {
      auto names = value_names(body.at("arg"));
      if (argument_kind(body.at("arg")) != "as_tensor") fail("a model input that is not a tensor");
      bind_value(names.at(0), b_.placeholder(names.at(0), "Tensor"));
      continue;
    }
    static const std::map<std::string, std::string> kStateName = {
        {"parameter", "parameter_name"}, {"buffer", "buffer_name"}, {"tensor_constant", "tensor_constant_name"}};
    auto state = kStateName.find(kind);
    if (state == kStateName.end()) fail("an input of kind '" + kind + "', which qfx does not read");
    std::string fqn = body.at(state->second).get<std::string>();
    if (archive_.tensors.count(fqn) == 0) fail(kind + " '" + fqn + "' has no tensor in the archive");
    values_[body.at("arg").at("name").get<std::string>()].state = fqn;
  }
}

void ProgramReader::outputs() {
  where_.clear();
  set_scope({}, 0);
  ir::Argument::Items items;
  for (const json& spec : archive_.program.at("graph_module").at("signature").at("output_specs")) {
    std::string kind = argument_kind(spec);
    if (kind != "user_output") {
      fail("the program's output '" + kind +
           "' writes a buffer or input (exported in training mode?): "
           "export the model in eval mode");
    }
    items.push_back(graph_argument(spec.at(kind).at("arg"), nullptr));
  }
  b_.output(items.size() == 1 ? items[0] : ir::Argument::tuple(std::move(items)));
}

/// Reads the node at `i` (with the rest of its leaf call); the index of the next node.
size_t ProgramReader::read_from(const json& nodes, size_t i) {
  const std::vector<ModuleEntry>& stack = stacks_[i];
  int leaf = leaf_index(stack);
  if (leaf < 0) {
    read_node(nodes[i], stack);
    return i + 1;
  }
  size_t end = i + 1;
  while (end < nodes.size()) {
    const std::vector<ModuleEntry>& next = stacks_[end];
    int next_leaf = leaf_index(next);
    if (next_leaf < 0 || next[next_leaf].key != stack[leaf].key) break;
    ++end;
  }
  leaf_call(nodes, i, end, stack, static_cast<size_t>(leaf));
  return end;
}

/// One node outside any leaf.
void ProgramReader::read_node(const json& node, const std::vector<ModuleEntry>& stack) {
  where_ = node.at("name").get<std::string>();
  set_scope(stack, stack.size());
  std::string target = node.at("target").get<std::string>();
  if (target == "_operator.getitem") {
    const json& inputs = node.at("inputs");
    bind(node,
         b_.getitem(graph_argument(inputs.at(0).at("arg"), nullptr), graph_argument(inputs.at(1).at("arg"), nullptr)));
    return;
  }
  if (target.rfind("_operator.", 0) == 0) return read_size_arithmetic(node, target.substr(10));
  c10::OperatorName op = aten_name(target);
  if (is_newer_op(op.name)) {
    ir::Node* result = call_special(b_, op.name, program_args(node));
    if (result == nullptr) fail("unsupported op " + target);
    bind(node, result);
    return;
  }
  const c10::FunctionSchema& schema = schema_of(node, op);
  std::vector<OpInput> inputs = op_inputs(node, schema);
  const NamedArgs args = schema_args(node, schema, inputs);
  if (read_assignment(node, op.name, args)) return;
  std::string written = written_value(node, schema);
  ir::Node* result = call_special(b_, op.name, args);
  if (result == nullptr && ir::find_op_mapping(op.name) != nullptr) {
    result = b_.call_mapped(op.name, schema.arguments(), inputs);
  } else if (result == nullptr && !written.empty() && op.name.back() == '_') {
    // x.detach_() as torch.ops.aten.detach(x): the out-of-place op FX's functional form records
    std::string pure = op.name.substr(0, op.name.size() - 1);
    const c10::FunctionSchema& functional = schema_of(node, {pure, op.overload_name});
    result = call_torch_op(b_, pure, functional.arguments(), op_inputs(node, functional));
  } else if (result == nullptr) {
    result = call_torch_op(b_, op.name, schema.arguments(), inputs);
  }
  bind(node, result);
  if (!written.empty()) values_[written].arg = result;  // later reads of the written tensor read the result
  if (!schema.returns().empty() && schema.returns()[0].alias_info() != nullptr && written.empty()) {
    for (const json& output : node.at("outputs")) {
      for (const std::string& name : value_names(output)) views_.insert(name);
    }
  }
}

/// Arithmetic on dynamic sizes (`_operator.mul(s0, 4)`) as FX records it on `x.size(d)`: operator.mul.
void ProgramReader::read_size_arithmetic(const json& node, const std::string& op) {
  static const std::set<std::string> kOps = {"add", "sub", "mul", "floordiv", "mod", "truediv", "neg", "pow"};
  if (kOps.count(op) == 0) fail("op _operator." + op + " on sizes, which qfx does not read");
  std::vector<ir::Argument> args;
  for (const json& input : node.at("inputs")) args.push_back(graph_argument(input.at("arg"), nullptr));
  bind(node, b_.call(ir::Opcode::kCallFunction, "operator." + op, std::move(args)));
}

/// The value an in-place op writes (`out += x` as aten.add_), read as the op's out-of-place
/// form (FX's); empty for other ops. An error for a write FX cannot express: into a view of
/// another tensor (`x[i] = v`) or into a parameter or buffer.
std::string ProgramReader::written_value(const json& node, const c10::FunctionSchema& schema) {
  if (!schema.is_mutable()) return "";
  for (const c10::Argument& a : schema.arguments()) {
    if (a.alias_info() == nullptr || !a.alias_info()->isWrite()) continue;
    const json* v = given(node, a.name());
    std::string name =
        v != nullptr && argument_kind(*v) == "as_tensor" ? v->at("as_tensor").at("name").get<std::string>() : "";
    if (name.empty() || views_.count(name) != 0) {
      fail("in-place op " + node.at("target").get<std::string>() +
           " on a view (an assignment such as `x[i] = v` in the model's forward): qfx reads it from TorchScript "
           "traces, not yet from .pt2 programs");
    }
    if (!values_[name].state.empty()) fail("in-place op writes " + values_[name].state + ", a tensor of the model");
    return name;
  }
  return "";
}

/// The values a node makes: its result, or getitems of it.
void ProgramReader::bind(const json& node, ir::Node* result) {
  const json& outputs = node.at("outputs");
  if (outputs.size() == 1) {
    std::string kind = argument_kind(outputs[0]);
    if (kind != "as_tensors") {
      for (const std::string& name : value_names(outputs[0])) bind_value(name, result);
      return;
    }
    int64_t i = 0;
    for (const std::string& name : value_names(outputs[0])) bind_value(name, b_.getitem(result, i++));
    return;
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (const std::string& name : value_names(outputs[i]))
      bind_value(name, b_.getitem(result, static_cast<int64_t>(i)));
  }
}

/// `name` is the value of `node`; a tensor the program records as neither float nor complex is
/// marked so (ir::kValueDtypeMeta).
void ProgramReader::bind_value(const std::string& name, ir::Node* node) {
  values_[name].arg = node;
  const json* meta = tensor_value(name);
  if (meta == nullptr || !meta->contains("dtype")) return;
  c10::ScalarType dtype = scalar_type(meta->at("dtype").get<int64_t>(), "value '" + name + "'");
  if (!c10::isFloatingType(dtype) && !c10::isComplexType(dtype)) node->meta()[ir::kValueDtypeMeta] = dtype;
}

/// A named value's graph argument; a parameter, buffer or constant becomes a get_attr at first use.
ir::Argument ProgramReader::value(const std::string& name) {
  auto it = values_.find(name);
  if (it == values_.end()) fail("value '" + name + "' is used before any node makes it");
  if (it->second.arg.is_none() && !it->second.state.empty()) {
    it->second.arg = b_.get_attr(it->second.state, archive_.tensors.at(it->second.state));
  }
  return it->second.arg;
}

/// Nodes made from here on record the first `count` modules of `stack` (the innermost as their scope).
void ProgramReader::set_scope(const std::vector<ModuleEntry>& stack, size_t count) {
  if (depth_ > 0) b_.exit_scope();
  depth_ = 0;
  if (count > 0) {
    b_.enter_scope(stack[count - 1].path, public_type_name(stack[count - 1].type));
    depth_ = 1;
  }
}

void read_program(const Archive& archive, ir::GraphModule& gm) {
  try {
    ProgramReader(archive, gm).read();
  } catch (const c10::Error&) {
    throw;
  } catch (const std::exception& e) {  // nlohmann's type and range errors; a value where none was expected
    TORCH_CHECK(false, "cannot read '", archive.path, "': ", archive.model_record, " is malformed (", e.what(), ")");
  }
}

}  // namespace qfx::io::pt2
