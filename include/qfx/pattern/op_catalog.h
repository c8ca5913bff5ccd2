#pragma once
/// \file
/// OpCatalog: the ops a pattern or a config may name, by PyTorch qualified
/// name, and what kind of op each is — a module type (`torch.nn.Conv2d`,
/// `torch.ao.nn.intrinsic.ConvReLU2d`), a function (`torch.add`,
/// `operator.add`, `torch.nn.functional.relu`) or a method (`reshape`).
///
/// A name is known when it is in the catalog's table of PyTorch names, when a
/// module type of that name is registered with ir::ModuleRegistry, or when the
/// interpreter runs a function of that name (ir::OpRegistry). Any plain
/// identifier is a method name. PyTorch 1.13's module paths are read as their
/// `torch.ao.nn` names (`torch.nn.intrinsic.ConvReLU2d` is
/// `torch.ao.nn.intrinsic.ConvReLU2d`, `torch.nn.quantized._reference.Linear`
/// is `torch.ao.nn.quantized.reference.Linear`).

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace qfx::pattern {

/// What a pattern element stands for. kClass is a class of values a rewrite
/// rule names by a test (`a reference module PyTorch lowers statically`);
/// configs never hold one.
enum class OpKind { kModule, kFunction, kMethod, kAny, kClass };

/// "module", "function", "method", "any" or "class".
const char* op_kind_name(OpKind kind);

/// One op of a pattern: a kind and a canonical PyTorch name. kAny is
/// PyTorch's `MatchAllNode` and matches any argument; for kClass the name
/// describes the class.
struct PatternOp {
  OpKind kind = OpKind::kAny;
  std::string name = "MatchAllNode";

  bool is_any() const { return kind == OpKind::kAny; }
  bool operator==(const PatternOp& other) const { return kind == other.kind && name == other.name; }
  bool operator!=(const PatternOp& other) const { return !(*this == other); }
};

/// The name of PyTorch's wildcard pattern element.
inline constexpr const char* kMatchAllNode = "MatchAllNode";

/// The process-wide catalog of op names.
class OpCatalog {
 public:
  static OpCatalog& instance();

  /// Makes `name` known as an op of `kind` (for module types or functions
  /// qfx only names, e.g. in a custom backend's config). Re-adding a name
  /// with the same kind is a no-op; with another kind it raises c10::Error.
  void add(const std::string& name, OpKind kind);

  /// The op `name` stands for (its canonical name and kind), or nullopt.
  std::optional<PatternOp> find(std::string_view name) const;

  /// As find, but raises c10::Error `unknown op "NAME"` for an unknown name.
  PatternOp resolve(std::string_view name) const;

  /// As resolve, and raises c10::Error unless the op is a module type.
  std::string resolve_module(std::string_view name) const;

  /// The catalog's own names of one kind, sorted (registered module types and
  /// interpreter functions not included).
  std::vector<std::string> names(OpKind kind) const;

 private:
  OpCatalog();
  std::unordered_map<std::string, OpKind> kinds_;
};

/// PyTorch 1.13's module path of a module type rewritten to its `torch.ao.nn`
/// name; other names unchanged.
std::string canonical_op_name(std::string_view name);

}  // namespace qfx::pattern
