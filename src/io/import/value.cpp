// TorchScript names of Python classes and functions, back to Python's.

#include "value.h"

#include <cctype>

namespace qfx::io::detail {

std::string python_qualified_name(const std::string& torchscript_name) {
  // Drops every `___torch_mangle_<digits>.`, in one pass.
  const std::string mangle = "___torch_mangle_";
  std::string name;
  for (size_t i = 0; i < torchscript_name.size();) {
    if (torchscript_name.compare(i, mangle.size(), mangle) == 0) {
      size_t end = i + mangle.size();
      while (end < torchscript_name.size() && std::isdigit(static_cast<unsigned char>(torchscript_name[end]))) ++end;
      if (end > i + mangle.size() && end < torchscript_name.size() && torchscript_name[end] == '.') {
        i = end + 1;
        continue;
      }
    }
    name += torchscript_name[i++];
  }
  const std::string prefix = "__torch__.";
  return name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
}

}  // namespace qfx::io::detail
