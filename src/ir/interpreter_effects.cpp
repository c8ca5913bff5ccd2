// Which steps may change tensors in place, read from their targets and
// module classes (the interpreter frees or shares values by it).

#include "interpreter_effects.h"

#include <string>
#include <unordered_set>

namespace qfx::ir::detail {
namespace {

bool is_true(const Argument& arg) { return arg.kind() == Argument::Kind::kBool && arg.to_bool(); }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool op_may_mutate(const Node& node) {
  const std::string& target = node.target();
  const std::string name = target.substr(target.rfind('.') + 1);
  if (ends_with(name, "_") && !ends_with(name, "__")) return true;
  if (name.rfind("__i", 0) == 0 || target.rfind("operator.i", 0) == 0) return true;
  if (target.find("setitem") != std::string::npos) return true;
  for (const auto& [key, value] : node.kwargs()) {
    if (key == "out" || (key == "inplace" && is_true(value))) return true;
  }
  if (target.rfind("torch.nn.functional.", 0) == 0) {
    for (const Argument& arg : node.args()) {
      if (is_true(arg)) return true;
    }
  }
  return false;
}

namespace {

// PyTorch's module classes that take `inplace` (not all of them show it in
// their repr: Hardswish, Hardsigmoid, Mish print nothing).
const std::unordered_set<std::string>& inplace_capable() {
  static const std::unordered_set<std::string> names = {
      "ReLU",      "ReLU6",     "RReLU",     "Hardtanh",     "Hardswish",          "Hardsigmoid", "SiLU",
      "Mish",      "ELU",       "CELU",      "SELU",         "LeakyReLU",          "Threshold",   "Dropout",
      "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"};
  return names;
}

}  // namespace

bool known_kind(const ModuleKind& kind) {
  return !kind.named_by_instance && kind.qualified_name.rfind("torch.", 0) == 0;
}

bool module_may_mutate(const ModuleKind& kind) {
  if (kind.observer) return false;
  if (!known_kind(kind)) return true;
  return inplace_capable().count(kind.qualified_name.substr(kind.qualified_name.rfind('.') + 1)) != 0;
}

}  // namespace qfx::ir::detail
