#pragma once
// The tables behind OpCatalog: PyTorch names configs may use, and the
// spellings that are other names for them.

#include "qfx/pattern/op_catalog.h"

#include <string>
#include <utility>
#include <vector>

namespace qfx::pattern::detail {

/// One known name.
struct OpNameRow {
  std::string name;
  OpKind kind;
};

/// Module types and functions that PyTorch's quantization configs name.
const std::vector<OpNameRow>& known_op_names();

/// Prefix rewrites from PyTorch 1.13 module paths to `torch.ao.nn` names.
const std::vector<std::pair<const char*, const char*>>& module_path_aliases();

/// Functions PyTorch also exposes under another name: the spelling configs
/// may use, and the `torch.nn.functional` name qfx uses for the same function.
const std::vector<std::pair<const char*, const char*>>& function_aliases();

}  // namespace qfx::pattern::detail
