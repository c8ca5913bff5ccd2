#pragma once
// Helpers for the rows that register module kinds: forward adaptors and the
// Python spellings used by `extra_repr`.

#include "qfx/ir/module_registry.h"
#include "qfx/ir/namespace.h"
#include "qfx/ir/python_literals.h"

#include <c10/util/ArrayRef.h>
#include <c10/util/Exception.h>
#include <torch/nn/module.h>

#include <string>
#include <vector>

namespace qfx::nn::detail {

template <typename Impl>
const Impl& as(const torch::nn::Module& m) {
  return dynamic_cast<const Impl&>(m);  // torch::nn::Module is a virtual base
}

/// forward(Tensor) of a module taking one input.
template <typename Impl>
ir::ModuleForward unary_forward() {
  return [](torch::nn::Module& m, std::vector<c10::IValue>& in) -> c10::IValue {
    TORCH_CHECK(in.size() == 1 && in[0].isTensor(), m.name(), " takes one Tensor input, got ",
                in.size(), " input(s)");
    return dynamic_cast<Impl&>(m).forward(in[0].toTensor());
  };
}

/// Registers a module kind (C++ type `Impl`) under a PyTorch name.
template <typename Impl>
void add_kind(const std::string& name, ir::ModuleExtraRepr extra_repr,
              ir::ModuleForward forward = unary_forward<Impl>()) {
  ir::ModuleRegistry::instance().add({name, typeid(Impl), std::move(forward), std::move(extra_repr), ""});
}

/// Python `repr` of a tuple of ints: `(3, 3)`, `(1,)`.
inline std::string py_tuple(c10::IntArrayRef values) {
  std::string out = "(";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + (values.size() == 1 ? ",)" : ")");
}

/// An int when all values are equal (as users usually write `kernel_size=3`),
/// else the tuple.
inline std::string py_compact(c10::IntArrayRef values) {
  for (int64_t v : values) {
    if (v != values[0]) return py_tuple(values);
  }
  return values.empty() ? "()" : std::to_string(values[0]);
}

inline std::string py_bool(bool value) { return value ? "True" : "False"; }
inline std::string py_float(double value) { return ir::python_float_repr(value); }

inline bool all_equal(c10::IntArrayRef values, int64_t v) {
  for (int64_t x : values) {
    if (x != v) return false;
  }
  return true;
}

}  // namespace qfx::nn::detail
