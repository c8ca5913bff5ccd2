// ProgramReader's leaf calls: the nodes one call of a torch.nn module made,
// as one call_module of the module the leaf table builds from them.

#include "arguments.h"
#include "reader.h"

#include "io/import/leaf_modules.h"

#include <algorithm>

namespace qfx::io::pt2 {

using json = nlohmann::json;

/// What the nodes [begin, end) of one leaf call make and read.
ProgramReader::LeafRun ProgramReader::leaf_run(const json& nodes, size_t begin, size_t end, const std::string& path) {
  LeafRun run;
  for (size_t i = begin; i < end; ++i) {
    const json& node = nodes[i];
    c10::OperatorName op = aten_name(node.at("target").get<std::string>());
    if (!op.name.empty() && !is_newer_op(op.name)) {
      const c10::FunctionSchema& schema = schema_of(node, op);
      detail::ProbedOp probed{op.name, {}, {}};
      for (const c10::Argument& a : schema.arguments()) probed.names.push_back(a.name());
      for (const OpInput& in : op_inputs(node, schema)) probed.inputs.push_back(in.constant);
      run.ops.push_back(std::move(probed));
    }
    for (const json& input : node.at("inputs")) {
      for (const std::string& name : value_names(input.at("arg"))) {
        if (run.made.count(name) != 0 || owned_by(name, path)) continue;  // the leaf's own
        if (values_.count(name) == 0) fail("value '" + name + "' is used before any node makes it");
        if (!is_tensor(name)) continue;  // a size computed outside the leaf (its initial state's batch)
        if (std::find(run.args.begin(), run.args.end(), name) == run.args.end()) run.args.push_back(name);
      }
    }
    for (const json& output : node.at("outputs")) {
      for (const std::string& name : value_names(output)) run.made.insert(name);
    }
  }
  for (const std::string& name : run.made) {
    auto use = last_use_.find(name);
    if (use != last_use_.end() && use->second >= static_cast<int>(end)) run.escaping.push_back(name);
  }
  return run;
}

/// Nodes [begin, end) made by one call of the leaf stack[leaf].
void ProgramReader::leaf_call(const json& nodes, size_t begin, size_t end, const std::vector<ModuleEntry>& stack,
                              size_t leaf) {
  const ModuleEntry& module = stack[leaf];
  where_ = nodes[begin].at("name").get<std::string>();
  LeafRun run = leaf_run(nodes, begin, end, module.path);
  auto tensors = [this, &module](const std::string& name) {
    auto it = archive_.tensors.find(module.path + "." + name);
    return it == archive_.tensors.end() ? at::Tensor() : it->second;
  };
  std::shared_ptr<torch::nn::Module> built;
  if (!b_.has_module(module.path)) {
    built =
        detail::build_leaf_module(detail::Leaf(std::move(run.ops), tensors, nullptr, false), module.type, module.path);
  }
  if (built == nullptr && !b_.has_module(module.path)) {  // no qfx form: its ATen ops, as nodes
    for (size_t i = begin; i < end; ++i) read_node(nodes[i], stack);
    return;
  }
  const json* recurrent = recurrent_op(nodes, begin, end);
  if (run.escaping.size() > 1 && recurrent == nullptr) {
    fail("module '" + module.path + "' (" + public_type_name(module.type) + ") gives " +
         std::to_string(run.escaping.size()) + " values to the rest of the program; qfx reads leaves that give one");
  }
  set_scope(stack, leaf);
  std::vector<ir::Argument> call_args;
  for (const std::string& name : run.args) call_args.push_back(value(name));
  ir::Node* call = b_.call_module(
      module.path, [&built] { return built; }, std::move(call_args));
  if (recurrent != nullptr) return bind_recurrent(*recurrent, call, run.escaping);
  for (const std::string& name : run.escaping) values_[name].arg = call;
}

/// The recurrent op (aten.lstm, aten.gru, aten.rnn_*) among nodes [begin, end), or nullptr.
const json* ProgramReader::recurrent_op(const json& nodes, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) {
    std::string op = aten_name(nodes[i].at("target").get<std::string>()).name;
    if (op == "aten::lstm" || op == "aten::gru" || op == "aten::rnn_tanh" || op == "aten::rnn_relu") return &nodes[i];
  }
  return nullptr;
}

/// FX's unpacking of a recurrent module's result: `out, (h, c) = self.lstm(x)`, `out, h = self.gru(x)`.
void ProgramReader::bind_recurrent(const json& op, ir::Node* call, const std::vector<std::string>& escaping) {
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
bool ProgramReader::is_tensor(const std::string& name) const {
  return graph_.find("tensor_values") == graph_.end() || tensor_value(name) != nullptr;
}

/// True for a parameter, buffer or constant of the module at `path`.
bool ProgramReader::owned_by(const std::string& name, const std::string& path) const {
  auto it = values_.find(name);
  return it != values_.end() && it->second.state.rfind(path + ".", 0) == 0;
}

}  // namespace qfx::io::pt2
