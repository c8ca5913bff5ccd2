// upgrade_program: older and decomposed programs in the form PyTorch 2.15's
// export records, so the reader knows one form. Schema 7 (PyTorch 2.5)
// nodes get their names; core ATen forms LibTorch 1.13 lacks become the
// composite op they stand for, when the values only the core form makes are
// unused; a flatten that 2.5 records as a view is a flatten again. Nodes an
// export pass hoisted to the program's start are read where their value is
// first used.

#include "archive.h"
#include "arguments.h"

#include <set>

namespace qfx::io::pt2 {
namespace {

using json = nlohmann::json;

/// The name schema 8 gives a node, for a schema 7 node that has none: its first output's.
std::string output_name(const json& node) {
  const json& outputs = node.at("outputs");
  std::vector<std::string> names = outputs.empty() ? std::vector<std::string>{} : value_names(outputs[0]);
  return names.empty() ? node.at("target").get<std::string>() : names[0];
}

/// The names of the values `node` reads.
std::set<std::string> inputs_of(const json& node) {
  std::set<std::string> names;
  for (const json& input : node.at("inputs")) {
    for (std::string& name : value_names(input.at("arg"))) names.insert(std::move(name));
  }
  return names;
}

/// The names of the values the program's nodes and outputs read.
std::set<std::string> read_values(const json& graph) {
  std::set<std::string> names;
  for (const json& node : graph.at("nodes")) names.merge(inputs_of(node));
  for (const json& output : graph.at("outputs")) {
    for (std::string& name : value_names(output)) names.insert(std::move(name));
  }
  return names;
}

/// `_native_batch_norm_legit_no_training(input, weight, bias, running_mean, running_var,
/// momentum, eps)` -> `batch_norm(..., training=False, momentum, eps, cudnn_enabled=True)`:
/// the inference BatchNorm that 2.5's export and run_decompositions() record.
bool recompose_batch_norm(json& node, const std::set<std::string>& read) {
  if (node.at("target") != "torch.ops.aten._native_batch_norm_legit_no_training.default") return false;
  json& outputs = node.at("outputs");
  for (size_t k = 1; k < outputs.size(); ++k) {
    const json& name = outputs[k].at("as_tensor").at("name");
    if (read.count(name.get<std::string>()) != 0) return false;  // its saved statistics are read
  }
  json inputs = json::array();
  for (const json& input : node.at("inputs")) {
    if (input.at("name") == "momentum") inputs.push_back({{"name", "training"}, {"arg", {{"as_bool", false}}}});
    inputs.push_back(input);
  }
  inputs.push_back({{"name", "cudnn_enabled"}, {"arg", {{"as_bool", true}}}});
  node["target"] = "torch.ops.aten.batch_norm.default";
  node["inputs"] = std::move(inputs);
  outputs = json::array({outputs[0]});
  return true;
}

/// The Python function that made `node` (its `torch_fn`: "flatten_1;builtin_function_or_method.flatten"
/// -> "flatten"), or "".
std::string torch_fn(const json& node) {
  auto meta = node.find("metadata");
  if (meta == node.end() || !meta->is_object()) return "";
  std::string fn = meta->value("torch_fn", "");
  return fn.substr(fn.rfind('.') == std::string::npos ? fn.size() : fn.rfind('.') + 1);
}

/// `torch.flatten(x, start_dim)` that PyTorch 2.5's export records as `view(x, [x.size(0), n])`
/// -> `aten.flatten.using_ints(x, start_dim)`: the output keeps x's first sizes and folds its
/// trailing ones into the last (what flatten with end_dim -1 gives).
bool recompose_flatten(json& node, const json& tensor_values) {
  const std::string target = node.at("target").get<std::string>();
  if ((target != "torch.ops.aten.view.default" && target != "torch.ops.aten.reshape.default") ||
      torch_fn(node) != "flatten" || node.at("outputs").size() != 1) {
    return false;
  }
  const json& self = node.at("inputs").at(0).at("arg");
  if (!self.contains("as_tensor") || !node.at("outputs")[0].contains("as_tensor")) return false;
  auto in = tensor_values.find(self.at("as_tensor").at("name").get<std::string>());
  auto out = tensor_values.find(node.at("outputs")[0].at("as_tensor").at("name").get<std::string>());
  if (in == tensor_values.end() || out == tensor_values.end()) return false;
  const json &in_sizes = in->at("sizes"), &out_sizes = out->at("sizes");
  if (out_sizes.empty() || out_sizes.size() > in_sizes.size()) return false;
  const size_t start = out_sizes.size() - 1;
  int64_t folded = 1;
  for (size_t d = 0; d < in_sizes.size(); ++d) {
    if (d < start && in_sizes[d] != out_sizes[d]) return false;
    if (d >= start && !in_sizes[d].contains("as_int")) return false;
    if (d >= start) folded *= in_sizes[d].at("as_int").get<int64_t>();
  }
  if (!out_sizes[start].contains("as_int") || out_sizes[start].at("as_int").get<int64_t>() != folded) return false;
  node["target"] = "torch.ops.aten.flatten.using_ints";
  node["inputs"] = json::array({{{"name", "self"}, {"arg", self}},
                                {{"name", "start_dim"}, {"arg", {{"as_int", static_cast<int64_t>(start)}}}},
                                {{"name", "end_dim"}, {"arg", {{"as_int", -1}}}}});
  return true;
}

/// True for a node an export pass added at the program's start (PyTorch 2.5's runtime-assert
/// pass reads each dynamic size there), not where the model computes it.
bool added_by_pass(const json& node) {
  auto meta = node.find("metadata");
  return meta != node.end() && meta->is_object() &&
         meta->value("stack_trace", "").find("insert_deferred_runtime_asserts") != std::string::npos;
}

/// Each node added by a pass moved to just before the first node that reads what it makes:
/// where symbolic_trace records `x.size(0)` (FX 1.13 observes no input that a size reads first).
void sink_pass_nodes(json& nodes) {
  for (size_t i = nodes.size(); i-- > 0;) {
    if (!added_by_pass(nodes[i])) continue;
    const std::string made = output_name(nodes[i]);
    size_t user = i + 1;
    while (user < nodes.size() && inputs_of(nodes[user]).count(made) == 0) ++user;
    if (user == nodes.size() || user == i + 1) continue;
    json node = std::move(nodes[i]);
    nodes.erase(nodes.begin() + static_cast<std::ptrdiff_t>(i));
    nodes.insert(nodes.begin() + static_cast<std::ptrdiff_t>(user - 1), std::move(node));
  }
}

}  // namespace

void upgrade_program(Archive& archive) {
  try {
    json& graph = archive.program.at("graph_module").at("graph");
    const bool unnamed = archive.program.at("schema_version").at("major").get<int>() <= 7;  // schema 5.3 and 7
    const std::set<std::string> read = read_values(graph);
    static const json kNoValues = json::object();
    const json& tensor_values = graph.contains("tensor_values") ? graph.at("tensor_values") : kNoValues;
    for (json& node : graph.at("nodes")) {
      if (unnamed && !node.contains("name")) node["name"] = output_name(node);
      recompose_batch_norm(node, read);
      recompose_flatten(node, tensor_values);
    }
    sink_pass_nodes(graph.at("nodes"));
  } catch (const json::exception& e) {
    fail(archive.path, archive.model_record + " is malformed (" + e.what() + ")");
  } catch (const c10::Error& e) {  // an output that is no torch.export argument
    fail(archive.path, archive.model_record + " is malformed (" + e.msg() + ")");
  }
}

}  // namespace qfx::io::pt2
