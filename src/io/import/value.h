#pragma once
// ImportValue: what a TorchScript value stands for while a graph is walked —
// a constant known at import time, a node of the graph being built, a module,
// a tensor attribute (materialized as get_attr on first use), a list or tuple
// of values, an indexed view that is only written through (`x[a:b, c] = v`,
// traced as slices then fill_), or an opaque value (a leaf's internals, never
// used).

#include "qfx/ir/node.h"

#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/api/module.h>

#include <string>
#include <vector>

namespace qfx::io::detail {

struct ImportValue {
  enum class Kind { kStatic, kNode, kModule, kAttr, kList, kTuple, kView, kOpaque };

  Kind kind = Kind::kOpaque;
  c10::IValue constant;                      // kStatic
  ir::Node* node = nullptr;                  // kNode
  std::string path;                          // kModule, kAttr: dotted path from the root
  c10::optional<torch::jit::Module> module;  // kModule
  at::Tensor tensor;                         // kAttr
  std::vector<ImportValue> items;            // kList, kTuple; kView: the indexed value
  ir::Argument::Items index;                 // kView: one entry per leading dimension

  static ImportValue of_static(c10::IValue v) {
    ImportValue out;
    out.kind = Kind::kStatic;
    out.constant = std::move(v);
    return out;
  }
  static ImportValue of_node(ir::Node* n) {
    ImportValue out;
    out.kind = Kind::kNode;
    out.node = n;
    return out;
  }
  static ImportValue of_module(std::string path, torch::jit::Module m) {
    ImportValue out;
    out.kind = Kind::kModule;
    out.path = std::move(path);
    out.module = std::move(m);
    return out;
  }
  static ImportValue of_attr(std::string path, at::Tensor t) {
    ImportValue out;
    out.kind = Kind::kAttr;
    out.path = std::move(path);
    out.tensor = std::move(t);
    return out;
  }
  static ImportValue of_sequence(Kind kind, std::vector<ImportValue> items) {
    ImportValue out;
    out.kind = kind;
    out.items = std::move(items);
    return out;
  }
  static ImportValue of_view(ImportValue base, ir::Argument::Items index) {
    ImportValue out;
    out.kind = Kind::kView;
    out.items = {std::move(base)};
    out.index = std::move(index);
    return out;
  }
  static ImportValue opaque() { return {}; }

  bool is_static() const { return kind == Kind::kStatic; }
};

/// The Python qualified name behind a TorchScript one: without `__torch__.`
/// and the JIT's `___torch_mangle_N.` parts (`torch.nn.modules.conv.Conv2d`).
std::string python_qualified_name(const std::string& torchscript_name);

/// "a.b" + "c" -> "a.b.c"; "" + "c" -> "c".
inline std::string join_path(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

}  // namespace qfx::io::detail
