// Nodes of an exported program: nn_module_stack entries and ATen targets.

#include "program_nodes.h"

#include "qfx/io/graph_builder.h"

namespace qfx::io::pt2 {

using json = nlohmann::json;

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
      // PyTorch 2.5 marks nodes its passes added (a dynamic size) with this entry, not an empty stack
      if (!e.path.empty() && e.key != "_empty_nn_module_stack_from_metadata_hook") stack.push_back(std::move(e));
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

}  // namespace qfx::io::pt2
