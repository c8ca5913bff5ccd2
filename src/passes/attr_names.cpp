// AttrNamer and scope_of.

#include "attr_names.h"

#include <ATen/core/Tensor.h>

namespace qfx::passes::detail {

ir::Node* AttrNamer::add(std::string prefix, const c10::IValue& value) {
  for (char& c : prefix) {
    if (c == '.') c = '_';
  }
  int64_t& i = next_[prefix];
  std::string name = prefix + std::to_string(i);
  while (gm_.find_submodule(name) != nullptr || gm_.has_attr(name)) name = prefix + std::to_string(++i);
  ++i;
  gm_.set_attr(name, value.isTensor() ? c10::IValue(value.toTensor().clone()) : value);
  return gm_.graph().get_attr(name);
}

std::string scope_of(const ir::Node* node) {
  if (node == nullptr) return "";
  auto it = node->meta().find(ir::kScopeMeta);
  return it == node->meta().end() ? "" : std::any_cast<const ir::NodeScope&>(it->second).module_path;
}

}  // namespace qfx::passes::detail
