// read_program: the exported program's nodes in order. A run of nodes that
// one call of a torch.nn leaf made (the same nn_module_stack key) becomes one
// call_module, the leaf built from the ATen ops of the run (as a TorchScript
// leaf is built from its forward's); any other node becomes the FX node of
// its ATen op. Values are looked up by name.

#include "program_reader.h"

#include "arguments.h"
#include "aten_calls.h"
#include "io/import/leaf_modules.h"
#include "qfx/io/graph_builder.h"
#include "qfx/ir/aten_ops.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <climits>
#include <map>
#include <set>

namespace qfx::io::pt2 {
namespace {

using json = nlohmann::json;

/// One entry of a node's nn_module_stack: the call's key (`L__self___fc@1`
/// for a module's second call), the module's path and its Python class.
struct ModuleEntry {
  std::string key, path, type;
};

/// The modules a node was made in, outermost first, without the root.
std::vector<ModuleEntry> module_stack(const json& node) {
  std::vector<ModuleEntry> stack;
  auto meta = node.find("metadata");
  if (meta == node.end() || !meta->is_object()) return stack;
  auto it = meta->find("nn_module_stack");
  if (it == meta->end() || !it->is_string()) return stack;
  std::string text = it->get<std::string>();
  for (size_t begin = 0; begin < text.size();) {
    size_t end = std::min(text.find(';', begin), text.size());
    std::string entry = text.substr(begin, end - begin);
    size_t first = entry.find(','), last = entry.rfind(',');
    if (first != std::string::npos && last > first) {
      ModuleEntry e{entry.substr(0, first), entry.substr(first + 1, last - first - 1), entry.substr(last + 1)};
      if (!e.path.empty()) stack.push_back(std::move(e));
    }
    begin = end + 1;
  }
  return stack;
}

/// The class of the exported model (`__main__.ResidualNet`): the root entry of a node's module stack.
std::string root_class(const json& nodes) {
  for (const json& node : nodes) {
    auto meta = node.find("metadata");
    if (meta == node.end() || !meta->is_object() || !meta->contains("nn_module_stack")) continue;
    const json& stack = meta->at("nn_module_stack");
    std::string text = stack.is_string() ? stack.get<std::string>() : "";
    std::string root = text.substr(0, text.find(';'));
    size_t first = root.find(','), last = root.rfind(',');
    if (first != std::string::npos && last == first + 1) return root.substr(last + 1);  // an empty path
  }
  return "";
}

/// The position of the entry FX keeps as a leaf (the outermost torch.nn module), or -1.
int leaf_index(const std::vector<ModuleEntry>& stack) {
  for (size_t i = 0; i < stack.size(); ++i) {
    if (is_leaf_module(stack[i].type)) return static_cast<int>(i);
  }
  return -1;
}

/// "torch.ops.aten.conv2d.default" -> {"aten::conv2d", ""}.
c10::OperatorName aten_name(const std::string& target) {
  const std::string prefix = "torch.ops.aten.";
  if (target.rfind(prefix, 0) != 0) return {"", ""};
  std::string rest = target.substr(prefix.size());
  size_t dot = rest.rfind('.');
  std::string overload = dot == std::string::npos ? "" : rest.substr(dot + 1);
  return {"aten::" + rest.substr(0, dot), overload == "default" ? "" : overload};
}

class ProgramReader {
 public:
  ProgramReader(const Archive& archive, ir::GraphModule& gm)
      : archive_(archive),
        graph_(archive.program.at("graph_module").at("graph")),
        b_(gm, [this](const std::string& what) { fail(what); }) {}

  void read() {
    const json& nodes = graph_.at("nodes");
    std::string root = root_class(nodes);
    if (!root.empty()) b_.module().set_class_name(root.substr(root.rfind('.') + 1));
    uses();
    inputs();
    for (size_t i = 0; i < nodes.size();) i = read_from(nodes, i);
    outputs();
    drop_unused_sizes();
  }

  /// x.size(d) nodes no node reads: sizes the program computed for a leaf's own use
  /// (an LSTM's initial state), which its call does not take.
  void drop_unused_sizes() {
    std::vector<ir::Node*> unused;
    for (ir::Node* node : b_.module().graph().nodes()) {
      if (node->op() == ir::Opcode::kCallMethod && node->target() == "size" && node->users().empty()) {
        unused.push_back(node);
      }
    }
    for (ir::Node* node : unused) b_.module().graph().erase_node(node);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    TORCH_CHECK(false, "cannot read '", archive_.path, "': ", where_.empty() ? "" : "node '" + where_ + "': ", what);
  }

  /// The last node that reads each value (graph outputs: after every node).
  void uses() {
    const json& nodes = graph_.at("nodes");
    for (size_t i = 0; i < nodes.size(); ++i) {
      for (const json& input : nodes[i].at("inputs")) {
        for (const std::string& name : value_names(input.at("arg"))) last_use_[name] = static_cast<int>(i);
      }
    }
    for (const json& spec : archive_.program.at("graph_module").at("signature").at("output_specs")) {
      for (const auto& [kind, body] : spec.items()) {
        if (!body.is_null() && body.contains("arg")) {
          for (const std::string& name : value_names(body.at("arg"))) last_use_[name] = INT_MAX;
        }
      }
    }
  }

  void inputs() {
    for (const json& spec : archive_.program.at("graph_module").at("signature").at("input_specs")) {
      std::string kind = argument_kind(spec);
      const json& body = spec.at(kind);
      if (kind == "user_input") {
        auto names = value_names(body.at("arg"));
        if (argument_kind(body.at("arg")) != "as_tensor") fail("a model input that is not a tensor");
        values_[names.at(0)].arg = b_.placeholder(names.at(0), "Tensor");
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

  void outputs() {
    where_.clear();
    set_scope({}, 0);
    ir::Argument::Items items;
    for (const json& spec : archive_.program.at("graph_module").at("signature").at("output_specs")) {
      std::string kind = argument_kind(spec);
      if (kind != "user_output") {
        fail("the program's output '" + kind + "' writes a buffer or input (exported in training mode?): "
             "export the model in eval mode");
      }
      items.push_back(graph_argument(spec.at(kind).at("arg"), nullptr));
    }
    b_.output(items.size() == 1 ? items[0] : ir::Argument::tuple(std::move(items)));
  }

  /// Reads the node at `i` (with the rest of its leaf call); the index of the next node.
  size_t read_from(const json& nodes, size_t i) {
    std::vector<ModuleEntry> stack = module_stack(nodes[i]);
    int leaf = leaf_index(stack);
    if (leaf < 0) {
      read_node(nodes[i], stack);
      return i + 1;
    }
    size_t end = i + 1;
    while (end < nodes.size()) {
      auto next = module_stack(nodes[end]);
      int next_leaf = leaf_index(next);
      if (next_leaf < 0 || next[next_leaf].key != stack[leaf].key) break;
      ++end;
    }
    leaf_call(nodes, i, end, stack, static_cast<size_t>(leaf));
    return end;
  }

  /// The schema of `node`'s ATen op, found in LibTorch's registry.
  const c10::FunctionSchema& schema_of(const json& node, const c10::OperatorName& op) {
    auto handle = c10::Dispatcher::singleton().findSchema(op);
    if (!handle) {
      fail("op " + node.at("target").get<std::string>() +
           (op.name.empty() ? " is not an ATen op" : " has no schema in LibTorch 1.13's ATen"));
    }
    return handle->schema();
  }

  /// The node's arguments in schema order; absent ones at their default.
  std::vector<OpInput> op_inputs(const json& node, const c10::FunctionSchema& schema) {
    std::vector<OpInput> inputs;
    for (const c10::Argument& a : schema.arguments()) {
      const json* given = nullptr;
      for (const json& input : node.at("inputs")) {
        if (input.at("name").get<std::string>() == a.name()) given = &input.at("arg");
      }
      if (given != nullptr) {
        inputs.push_back({constant_of(*given), [this, given](const c10::TypePtr& type) {
                            return graph_argument(*given, type);
                          }});
      } else if (a.default_value()) {
        inputs.push_back(OpInput::of_constant(*a.default_value()));
      } else {
        fail("argument '" + a.name() + "' of " + schema.name() + " is missing");
      }
    }
    return inputs;
  }

  /// A named value's graph argument; a parameter, buffer or constant becomes a get_attr at first use.
  ir::Argument value(const std::string& name) {
    auto it = values_.find(name);
    if (it == values_.end()) fail("value '" + name + "' is used before any node makes it");
    if (it->second.arg.is_none() && !it->second.state.empty()) {
      it->second.arg = b_.get_attr(it->second.state, archive_.tensors.at(it->second.state));
    }
    return it->second.arg;
  }

  ir::Argument graph_argument(const json& argument, const c10::TypePtr& type) {
    if (auto c = constant_of(argument)) return b_.constant(*c, type);
    std::string kind = argument_kind(argument);
    const json& v = argument.at(kind);
    if (kind == "as_tensor") return value(v.at("name").get<std::string>());
    if (kind == "as_sym_int" || kind == "as_sym_float" || kind == "as_sym_bool") return symbolic_item(v);
    ir::Argument::Items items;
    for (const json& item : v) {
      if (kind == "as_tensors") items.push_back(value(item.at("name").get<std::string>()));
      if (kind == "as_optional_tensors") items.push_back(graph_argument(item, nullptr));
      if (kind == "as_sym_ints") items.push_back(symbolic_item(item));
    }
    if (kind == "as_optional_tensor") return graph_argument(v, nullptr);
    return ir::Argument::list(std::move(items));
  }

  ir::Argument symbolic_item(const json& item) {
    if (item.contains("as_name") && !item["as_name"].is_null()) return value(item["as_name"].get<std::string>());
    return b_.constant(*constant_of(item), nullptr);
  }

  /// One node outside any leaf.
  void read_node(const json& node, const std::vector<ModuleEntry>& stack) {
    where_ = node.at("name").get<std::string>();
    set_scope(stack, stack.size());
    std::string target = node.at("target").get<std::string>();
    if (target == "_operator.getitem") {
      const json& inputs = node.at("inputs");
      bind(node, b_.getitem(graph_argument(inputs.at(0).at("arg"), nullptr),
                            graph_argument(inputs.at(1).at("arg"), nullptr)));
      return;
    }
    c10::OperatorName op = aten_name(target);
    if (is_newer_op(op.name)) {
      ir::Node* result = call_special(b_, op.name, program_args(node));
      if (result == nullptr) fail("unsupported op " + target);
      bind(node, result);
      return;
    }
    const c10::FunctionSchema& schema = schema_of(node, op);
    std::string written = written_value(node, schema);
    std::vector<OpInput> inputs = op_inputs(node, schema);
    ir::Node* result = call_special(b_, op.name, schema_args(node, schema, inputs));
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
      views_.insert(node.at("name").get<std::string>());
      for (const json& output : node.at("outputs")) {
        for (const std::string& name : value_names(output)) views_.insert(name);
      }
    }
  }

  /// The value an in-place op writes (`out += x` as aten.add_), read as the op's out-of-place
  /// form (FX's); empty for other ops. An error for a write FX cannot express: into a view of
  /// another tensor (`x[i] = v`) or into a parameter or buffer.
  std::string written_value(const json& node, const c10::FunctionSchema& schema) {
    if (!schema.is_mutable()) return "";
    for (const c10::Argument& a : schema.arguments()) {
      if (a.alias_info() == nullptr || !a.alias_info()->isWrite()) continue;
      const json* v = given(node, a.name());
      std::string name = v != nullptr && argument_kind(*v) == "as_tensor" ? v->at("as_tensor").at("name").get<std::string>() : "";
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

  /// The last size of tensor `name` when the program records it as a number.
  c10::optional<int64_t> last_size(const std::string& name) const {
    auto values = graph_.find("tensor_values");
    if (values == graph_.end() || !values->contains(name)) return c10::nullopt;
    const json& sizes = values->at(name).at("sizes");
    if (sizes.empty() || !sizes.back().contains("as_int")) return c10::nullopt;
    return sizes.back().at("as_int").get<int64_t>();
  }

  /// The node's input `name` as the program gives it, or nullptr.
  static const json* given(const json& node, const std::string& name) {
    for (const json& input : node.at("inputs")) {
      if (input.at("name").get<std::string>() == name) return &input.at("arg");
    }
    return nullptr;
  }

  /// Arguments of an op LibTorch 1.13 has no schema of, by the program's names (absent: None).
  NamedArgs program_args(const json& node) {
    NamedArgs a;
    a.arg = [this, &node](const std::string& name) {
      const json* v = given(node, name);
      return v == nullptr ? ir::Argument() : graph_argument(*v, nullptr);
    };
    a.constant = [&node](const std::string& name) {
      const json* v = given(node, name);
      return v == nullptr ? c10::make_optional(c10::IValue()) : constant_of(*v);
    };
    a.last_size = [this, &node](const std::string& name) -> c10::optional<int64_t> {
      const json* v = given(node, name);
      if (v == nullptr || argument_kind(*v) != "as_tensor") return c10::nullopt;
      return last_size(v->at("as_tensor").at("name").get<std::string>());
    };
    a.has = [&node](const std::string& name) { return given(node, name) != nullptr; };
    a.is_bool = [this, &node](const std::string& name) {
      const json* v = given(node, name);
      if (v == nullptr || argument_kind(*v) != "as_tensor") return false;
      auto values = graph_.find("tensor_values");
      std::string tensor = v->at("as_tensor").at("name").get<std::string>();
      return values != graph_.end() && values->contains(tensor) && values->at(tensor).value("dtype", 0) == 12;
    };
    return a;
  }

  /// Arguments by schema name, read from the normalized `inputs`.
  NamedArgs schema_args(const json& node, const c10::FunctionSchema& schema, const std::vector<OpInput>& inputs) {
    NamedArgs a = program_args(node);
    auto index = [&schema, this](const std::string& name) {
      auto i = schema.argumentIndexWithName(name);
      if (!i) fail("internal: " + schema.name() + " has no argument '" + name + "'");
      return *i;
    };
    a.arg = [this, &schema, &inputs, index](const std::string& name) {
      size_t i = index(name);
      const OpInput& in = inputs[i];
      return in.value ? in.value(schema.arguments()[i].real_type()) : b_.constant(*in.constant, schema.arguments()[i].real_type());
    };
    a.constant = [&inputs, index](const std::string& name) { return inputs[index(name)].constant; };
    a.has = [&schema](const std::string& name) { return schema.argumentIndexWithName(name).has_value(); };
    return a;
  }

  /// The values a node makes: its result, or getitems of it.
  void bind(const json& node, ir::Node* result) {
    const json& outputs = node.at("outputs");
    if (outputs.size() == 1) {
      std::string kind = argument_kind(outputs[0]);
      if (kind != "as_tensors") {
        for (const std::string& name : value_names(outputs[0])) values_[name].arg = result;
        return;
      }
      int64_t i = 0;
      for (const std::string& name : value_names(outputs[0])) values_[name].arg = b_.getitem(result, i++);
      return;
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      for (const std::string& name : value_names(outputs[i])) {
        values_[name].arg = b_.getitem(result, static_cast<int64_t>(i));
      }
    }
  }

  /// Nodes [begin, end) made by one call of the leaf stack[leaf].
  void leaf_call(const json& nodes, size_t begin, size_t end, const std::vector<ModuleEntry>& stack, size_t leaf) {
    const ModuleEntry& module = stack[leaf];
    where_ = nodes[begin].at("name").get<std::string>();
    std::set<std::string> made;
    std::vector<std::string> args;  // values from outside the leaf, in the order the leaf reads them
    std::vector<detail::ProbedOp> ops;
    for (size_t i = begin; i < end; ++i) {
      const json& node = nodes[i];
      c10::OperatorName op = aten_name(node.at("target").get<std::string>());
      if (!op.name.empty() && !is_newer_op(op.name)) {
        detail::ProbedOp probed{op.name, {}};
        for (const OpInput& in : op_inputs(node, schema_of(node, op))) probed.inputs.push_back(in.constant);
        ops.push_back(std::move(probed));
      }
      for (const json& input : node.at("inputs")) {
        for (const std::string& name : value_names(input.at("arg"))) {
          if (made.count(name) != 0 || owned_by(name, module.path)) continue;  // the leaf's own
          if (values_.count(name) == 0) fail("value '" + name + "' is used before any node makes it");
          if (!is_tensor(name)) continue;  // a size computed outside the leaf (its initial state's batch)
          if (std::find(args.begin(), args.end(), name) == args.end()) args.push_back(name);
        }
      }
      for (const json& output : node.at("outputs")) {
        for (const std::string& name : value_names(output)) made.insert(name);
      }
    }
    auto tensors = [this, &module](const std::string& name) {
      auto it = archive_.tensors.find(module.path + "." + name);
      return it == archive_.tensors.end() ? at::Tensor() : it->second;
    };
    std::shared_ptr<torch::nn::Module> built;
    if (!b_.has_module(module.path)) {
      built = detail::build_leaf_module(detail::Leaf(std::move(ops), tensors, nullptr, false), module.type, module.path);
    }
    if (built == nullptr && !b_.has_module(module.path)) {  // no qfx form: its ATen ops, as nodes
      for (size_t i = begin; i < end; ++i) read_node(nodes[i], stack);
      return;
    }
    std::vector<std::string> escaping;
    for (const std::string& name : made) {
      auto use = last_use_.find(name);
      if (use != last_use_.end() && use->second >= static_cast<int>(end)) escaping.push_back(name);
    }
    const json* recurrent = recurrent_op(nodes, begin, end);
    if (escaping.size() > 1 && recurrent == nullptr) {
      fail("module '" + module.path + "' (" + public_type_name(module.type) + ") gives " +
           std::to_string(escaping.size()) + " values to the rest of the program; qfx reads leaves that give one");
    }
    set_scope(stack, leaf);
    std::vector<ir::Argument> call_args;
    for (const std::string& name : args) call_args.push_back(value(name));
    ir::Node* call = b_.call_module(
        module.path, [&built] { return built; }, std::move(call_args));
    if (recurrent != nullptr) return bind_recurrent(*recurrent, call, escaping);
    for (const std::string& name : escaping) values_[name].arg = call;
  }

  /// The recurrent op (aten.lstm, aten.gru, aten.rnn_*) among nodes [begin, end), or nullptr.
  static const json* recurrent_op(const json& nodes, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      std::string op = aten_name(nodes[i].at("target").get<std::string>()).name;
      if (op == "aten::lstm" || op == "aten::gru" || op == "aten::rnn_tanh" || op == "aten::rnn_relu") return &nodes[i];
    }
    return nullptr;
  }

  /// FX's unpacking of a recurrent module's result: `out, (h, c) = self.lstm(x)`, `out, h = self.gru(x)`.
  void bind_recurrent(const json& op, ir::Node* call, const std::vector<std::string>& escaping) {
    bool lstm = aten_name(op.at("target").get<std::string>()).name == "aten::lstm";
    ir::Node* state = nullptr;
    const json& outputs = op.at("outputs");
    for (size_t k = 0; k < outputs.size(); ++k) {
      for (const std::string& name : value_names(outputs[k])) {
        if (std::find(escaping.begin(), escaping.end(), name) == escaping.end()) continue;
        if (k == 0 || !lstm) {
          values_[name].arg = b_.getitem(call, static_cast<int64_t>(k));
          continue;
        }
        if (state == nullptr) state = b_.getitem(call, 1);
        values_[name].arg = b_.getitem(state, static_cast<int64_t>(k) - 1);
      }
    }
  }

  /// True when the program records `name` as a tensor (not a symbolic size).
  bool is_tensor(const std::string& name) const {
    auto values = graph_.find("tensor_values");
    return values == graph_.end() || values->contains(name);
  }

  /// True for a parameter, buffer or constant of the module at `path`.
  bool owned_by(const std::string& name, const std::string& path) const {
    auto it = values_.find(name);
    return it != values_.end() && it->second.state.rfind(path + ".", 0) == 0;
  }

  /// Nodes made from here on record the first `count` modules of `stack` (the innermost as their scope).
  void set_scope(const std::vector<ModuleEntry>& stack, size_t count) {
    if (depth_ > 0) b_.exit_scope();
    depth_ = 0;
    if (count > 0) {
      b_.enter_scope(stack[count - 1].path, public_type_name(stack[count - 1].type));
      depth_ = 1;
    }
  }

  struct Value {
    ir::Argument arg;   ///< the graph value (a state tensor's get_attr once read)
    std::string state;  ///< a parameter's, buffer's or constant's name
  };

  const Archive& archive_;
  const json& graph_;
  GraphBuilder b_;
  std::map<std::string, Value> values_;
  std::set<std::string> views_;  // values that are views of others (slices, transposes, ...)
  std::map<std::string, int> last_use_;
  std::string where_;
  int depth_ = 0;
};

}  // namespace

void read_program(const Archive& archive, ir::GraphModule& gm) {
  try {
    ProgramReader(archive, gm).read();
  } catch (const json::exception& e) {
    TORCH_CHECK(false, "cannot read '", archive.path, "': ", archive.model_record, " is malformed (", e.what(), ")");
  }
}

}  // namespace qfx::io::pt2
