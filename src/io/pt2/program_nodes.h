#pragma once
// The nodes of an exported program: their targets as ATen operator names, the
// modules they were made in (nn_module_stack). Internal to src/io.

#include <ATen/core/operator_name.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace qfx::io::pt2 {

/// One entry of a node's nn_module_stack: the call's key (`L__self___fc@1`
/// for a module's second call), the module's path and its Python class.
struct ModuleEntry {
  std::string key, path, type;
};

/// The modules a node was made in, outermost first, without the root.
std::vector<ModuleEntry> module_stack(const nlohmann::json& node);

/// The class of the exported model (`__main__.ResidualNet`): the root entry of a node's module stack.
std::string root_class(const nlohmann::json& nodes);

/// The position of the entry FX keeps as a leaf (the outermost torch.nn module), or -1.
int leaf_index(const std::vector<ModuleEntry>& stack);

/// "torch.ops.aten.conv2d.default" -> {"aten::conv2d", ""}; empty names for other targets.
c10::OperatorName aten_name(const std::string& target);

}  // namespace qfx::io::pt2
