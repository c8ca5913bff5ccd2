// ModuleRegistry: module kinds by C++ type and by PyTorch name, and Python's
// Module.__repr__ layout for printing module trees.

#include "qfx/ir/module_registry.h"

#include "builtin_registrations.h"

#include <c10/util/Exception.h>
#include <torch/nn/module.h>

#include <algorithm>

namespace qfx::ir {

ModuleRegistry& ModuleRegistry::instance() {
  static ModuleRegistry registry;
  return registry;
}

void ModuleRegistry::add(ModuleKind kind) {
  TORCH_CHECK(by_name_.count(kind.qualified_name) == 0, "module kind ", kind.qualified_name, " is registered twice");
  TORCH_CHECK(by_type_.count(kind.type) == 0, "C++ module type of ", kind.qualified_name, " is registered twice");
  kinds_.push_back(std::make_unique<ModuleKind>(std::move(kind)));
  const ModuleKind* k = kinds_.back().get();
  by_type_.emplace(k->type, k);
  by_name_.emplace(k->qualified_name, k);
}

const ModuleKind* ModuleRegistry::find(const torch::nn::Module& module) const {
  auto it = by_type_.find(std::type_index(typeid(module)));
  return it == by_type_.end() ? nullptr : it->second;
}

const ModuleKind* ModuleRegistry::find(const std::string& qualified_name) const {
  auto it = by_name_.find(qualified_name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<std::string> ModuleRegistry::names() const {
  std::vector<std::string> names;
  for (const auto& k : kinds_) names.push_back(k->qualified_name);
  std::sort(names.begin(), names.end());
  return names;
}

std::string module_type_name(const torch::nn::Module& module) {
  const ModuleKind* kind = ModuleRegistry::instance().find(module);
  return kind != nullptr ? kind->qualified_name : module.name();
}

namespace {

std::string display_name(const torch::nn::Module& module) {
  const ModuleKind* kind = ModuleRegistry::instance().find(module);
  if (kind == nullptr || kind->named_by_instance) return module.name();
  if (!kind->display_name.empty()) return kind->display_name;
  size_t dot = kind->qualified_name.rfind('.');
  return kind->qualified_name.substr(dot == std::string::npos ? 0 : dot + 1);
}

// Python's _addindent: every line but the first is indented.
std::string add_indent(const std::string& text, int spaces) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out += std::string(spaces, ' ');
  }
  return out;
}

}  // namespace

std::string module_repr(const torch::nn::Module& module) {
  const ModuleKind* kind = ModuleRegistry::instance().find(module);
  std::string extra = kind != nullptr && kind->extra_repr ? kind->extra_repr(module) : "";
  std::vector<std::string> lines;
  size_t start = 0;
  while (!extra.empty() && start <= extra.size()) {
    size_t end = extra.find('\n', start);
    lines.push_back(extra.substr(start, end == std::string::npos ? std::string::npos : end - start));
    start = end == std::string::npos ? extra.size() + 1 : end + 1;
  }
  size_t extra_lines = lines.size();
  auto children = module.named_children();
  for (const auto& child : children) {
    lines.push_back("(" + child.key() + "): " + add_indent(module_repr(*child.value()), 2));
  }
  std::string out = display_name(module) + "(";
  if (extra_lines == 1 && children.is_empty()) {
    out += lines[0];
  } else if (!lines.empty()) {
    for (const auto& line : lines) out += "\n  " + line;
    out += "\n";
  }
  return out + ")";
}

void register_builtins() {
  register_functional_ops();
  register_torch_ops();
  register_tensor_methods();
  register_container_kind();
}

}  // namespace qfx::ir
