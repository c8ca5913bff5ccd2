// AttrNamer and scope_of.

#include "attr_names.h"

#include <ATen/core/Tensor.h>

namespace qfx::passes::detail {

ir::Node* AttrNamer::add(std::string prefix, c10::IValue value) {
  for (char& c : prefix) {
    if (c == '.') c = '_';
  }
  int64_t& i = next_[prefix];
  std::string name = prefix + std::to_string(i);
  while (gm_.find_submodule(name) != nullptr || gm_.has_attr(name)) name = prefix + std::to_string(++i);
  ++i;
  if (value.isTensor()) {
    const at::Tensor& tensor = value.toTensor();
    if (tensor.use_count() != 1 || tensor.storage().use_count() != 1) value = tensor.clone();
  }
  gm_.set_attr(name, std::move(value));
  return gm_.graph().get_attr(name);
}

std::string scope_of(const ir::Node* node) {
  if (node == nullptr) return "";
  auto it = node->meta().find(ir::kScopeMeta);
  return it == node->meta().end() ? "" : std::any_cast<const ir::NodeScope&>(it->second).module_path;
}

}  // namespace qfx::passes::detail
