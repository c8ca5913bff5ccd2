// Which modules FX keeps as leaves, and their public names.

#include "qfx/io/graph_builder.h"

#include <set>

namespace qfx::io {

bool traced_through(const std::string& python_class) {
  static const std::set<std::string> containers = {
      "torch.nn.modules.container.Sequential",           "torch.nn.modules.transformer.Transformer",
      "torch.nn.modules.transformer.TransformerEncoder", "torch.nn.modules.transformer.TransformerEncoderLayer",
      "torch.nn.modules.transformer.TransformerDecoder", "torch.nn.modules.transformer.TransformerDecoderLayer",
  };
  return containers.count(python_class) != 0;
}

bool is_leaf_module(const std::string& python_class) {
  bool under_nn = python_class.rfind("torch.nn.", 0) == 0 || python_class.rfind("torch.ao.nn.", 0) == 0;
  return under_nn && !traced_through(python_class);
}

std::string public_type_name(const std::string& python_class) {
  size_t modules = python_class.find(".modules.");
  if (python_class.rfind("torch.", 0) != 0 || modules == std::string::npos) return python_class;
  return python_class.substr(0, modules) + python_class.substr(python_class.rfind('.'));
}

}  // namespace qfx::io
