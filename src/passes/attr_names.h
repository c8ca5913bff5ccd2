#pragma once
// New root attributes named as PyTorch's get_new_attr_name_with_prefix
// (`linear_input_scale_0`, `linear_packed_weight_0`), and node scopes.

#include "qfx/ir/graph_module.h"

#include <string>
#include <unordered_map>

namespace qfx::passes::detail {

/// Names new root attributes `prefix` + the first free index (dots in the
/// prefix become underscores); remembers where each prefix's free indexes
/// start, so a flat graph with thousands of them stays linear.
class AttrNamer {
 public:
  explicit AttrNamer(ir::GraphModule& gm) : gm_(gm) {}
  /// Sets a new attribute holding `value` and returns a get_attr node for
  /// it, inserted where the graph inserts now. Tensors are cloned, as
  /// PyTorch's create_getattr_from_value does, unless `value` is the only
  /// holder of the tensor and its storage (a temporary is its own copy).
  ir::Node* add(std::string prefix, c10::IValue value);

 private:
  ir::GraphModule& gm_;
  std::unordered_map<std::string, int64_t> next_;
};

/// The module path a node came from (its scope meta), "" if none.
std::string scope_of(const ir::Node* node);

}  // namespace qfx::passes::detail
