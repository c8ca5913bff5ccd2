// TorchScript names of Python classes and functions, back to Python's.

#include "value.h"

#include <regex>

namespace qfx::io::detail {

std::string python_qualified_name(const std::string& torchscript_name) {
  static const std::regex kMangle(R"(___torch_mangle_\d+\.)");
  std::string name = std::regex_replace(torchscript_name, kMangle, "");
  const std::string prefix = "__torch__.";
  return name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
}

}  // namespace qfx::io::detail
