// OpCatalog: resolves op names to their canonical PyTorch name and kind, from
// the catalog's tables, the module registry and the interpreter's functions.

#include "qfx/pattern/op_catalog.h"
#include "util/json_path.h"

#include "op_names.h"
#include "qfx/ir/module_registry.h"
#include "qfx/ir/op_registry.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cctype>

namespace qfx::pattern {
namespace {

bool is_identifier(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

}  // namespace

const char* op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::kModule: return "module";
    case OpKind::kFunction: return "function";
    case OpKind::kMethod: return "method";
    case OpKind::kAny: return "any";
    case OpKind::kClass: return "class";
  }
  return "?";
}

std::string canonical_op_name(std::string_view name) {
  for (const auto& [from, to] : detail::function_aliases()) {
    if (name == from) return to;
  }
  for (const auto& [from, to] : detail::module_path_aliases()) {
    std::string_view prefix(from);
    if (name.substr(0, prefix.size()) == prefix) return to + std::string(name.substr(prefix.size()));
  }
  return std::string(name);
}

OpCatalog::OpCatalog() {
  for (const detail::OpNameRow& row : detail::known_op_names()) kinds_.emplace(row.name, row.kind);
}

OpCatalog& OpCatalog::instance() {
  static OpCatalog catalog;
  return catalog;
}

void OpCatalog::add(const std::string& name, OpKind kind) {
  TORCH_CHECK(kind == OpKind::kModule || kind == OpKind::kFunction,
              "OpCatalog::add: only module types and functions are added, not ", op_kind_name(kind), "s");
  TORCH_CHECK(name.find('.') != std::string::npos, "OpCatalog::add: \"", name,
              "\" is not a qualified name (package.Name)");
  auto [it, inserted] = kinds_.emplace(canonical_op_name(name), kind);
  TORCH_CHECK(inserted || it->second == kind, "OpCatalog::add: \"", name, "\" is already known as a ",
              op_kind_name(it->second));
}

std::optional<PatternOp> OpCatalog::find(std::string_view name) const {
  if (name == kMatchAllNode) return PatternOp{};
  std::string canonical = canonical_op_name(name);
  if (auto it = kinds_.find(canonical); it != kinds_.end()) return PatternOp{it->second, canonical};
  if (ir::ModuleRegistry::instance().find(canonical)) return PatternOp{OpKind::kModule, canonical};
  if (ir::OpRegistry::functions().find(canonical)) return PatternOp{OpKind::kFunction, canonical};
  if (is_identifier(canonical)) return PatternOp{OpKind::kMethod, canonical};
  return std::nullopt;
}

PatternOp OpCatalog::resolve(std::string_view name) const {
  std::optional<PatternOp> op = find(name);
  TORCH_CHECK(op, "unknown op ", qfx::detail::echoed(std::string(name)),
              " (not a module type, function or method qfx knows; register it with "
              "qfx::pattern::OpCatalog::add)");
  return *op;
}

std::string OpCatalog::resolve_module(std::string_view name) const {
  std::optional<PatternOp> op = find(name);
  TORCH_CHECK(op && op->kind == OpKind::kModule, "unknown module type ", qfx::detail::echoed(std::string(name)));
  return op->name;
}

std::vector<std::string> OpCatalog::names(OpKind kind) const {
  std::vector<std::string> out;
  for (const auto& [name, k] : kinds_) {
    if (k == kind) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace qfx::pattern
