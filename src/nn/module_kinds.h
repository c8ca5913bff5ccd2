#pragma once
// Helpers for the rows that register module kinds: forward adaptors and the
// Python spellings used by `extra_repr`.

#include "qfx/ir/module_registry.h"
#include "qfx/ir/namespace.h"
#include "qfx/ir/python_literals.h"

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/Exception.h>
#include <torch/nn/module.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace qfx::nn {

// The registration functions of nn's built-ins, one per file that defines
// them; nn::register_builtins() calls them in this order.
void register_linear_conv_kinds();    // kinds_linear_conv.cpp: torch.nn.Linear, Conv*
void register_pool_norm_kinds();      // kinds_pool_norm.cpp: pooling, normalization, dropout, ...
void register_activation_kinds();     // kinds_activation.cpp: ReLU, Hardswish, ...
void register_rnn_kinds();            // kinds_rnn.cpp: LSTM, GRU, RNN cells
void register_attention_kinds();      // kinds_transformer.cpp: MultiheadAttention, TransformerEncoder
void register_opaque_kinds();         // opaque_modules.cpp: script and nested graph modules
void register_fused_kinds();          // intrinsic.cpp: torch.ao.nn.intrinsic.*
void register_fuser_methods();        // fuser_methods.cpp: fuse_conv_bn, ... (backend registry)
void register_qat_kinds();            // qat.cpp: torch.ao.nn.qat.*, intrinsic.qat.*
void register_reference_kinds();      // reference.cpp: torch.ao.nn.quantized.reference.*
void register_quantized_kinds();      // quantized_module.cpp: torch.ao.nn.quantized.*
void register_quantized_rnn_kinds();  // quantized_rnn.cpp: reference and dynamic RNNs
void register_lstm_kinds();           // quantizable_lstm.cpp: custom module LSTM, DeQuantStub

}  // namespace qfx::nn

namespace qfx::nn::detail {

template <typename Impl>
const Impl& as(const torch::nn::Module& m) {
  return dynamic_cast<const Impl&>(m);  // torch::nn::Module is a virtual base
}

/// The input of a module taking one Tensor; c10::Error otherwise.
inline const at::Tensor& only_tensor_input(const torch::nn::Module& m, const std::vector<c10::IValue>& in) {
  TORCH_CHECK(in.size() == 1 && in[0].isTensor(), m.name(), " takes one Tensor input, got ", in.size(), " input(s)");
  return in[0].toTensor();
}

/// forward(Tensor) of a module taking one input.
template <typename Impl>
ir::ModuleForward unary_forward() {
  return [](torch::nn::Module& m, std::vector<c10::IValue>& in) -> c10::IValue {
    return dynamic_cast<Impl&>(m).forward(only_tensor_input(m, in));
  };
}

/// An LSTM's initial-state argument `(h_0, c_0)`; c10::Error for anything else.
inline std::pair<at::Tensor, at::Tensor> lstm_state(const c10::IValue& hx) {
  TORCH_CHECK(hx.isTuple() && hx.toTupleRef().elements().size() == 2, "LSTM's initial state is (h_0, c_0)");
  const auto& items = hx.toTupleRef().elements();
  return {items[0].toTensor(), items[1].toTensor()};
}

/// Registers a module kind (C++ type `Impl`) under a PyTorch name.
template <typename Impl>
void add_kind(const std::string& name, ir::ModuleExtraRepr extra_repr,
              ir::ModuleForward forward = unary_forward<Impl>()) {
  ir::ModuleRegistry::instance().add({name, typeid(Impl), std::move(forward), std::move(extra_repr), ""});
}

/// The forward of a module taking one input, as `fn(module, input)`: a
/// kind's fresh_forward (computes into a new tensor whatever `inplace` says).
template <typename Impl>
ir::ModuleForward unary_fresh_forward(at::Tensor (*fn)(const Impl&, const at::Tensor&)) {
  return [fn](torch::nn::Module& m, std::vector<c10::IValue>& in) -> c10::IValue {
    return fn(dynamic_cast<const Impl&>(m), only_tensor_input(m, in));
  };
}

/// Registers a module kind that may compute in place, with its forward
/// into a new tensor (ModuleKind::fresh_forward).
template <typename Impl>
void add_inplace_kind(const std::string& name, ir::ModuleExtraRepr extra_repr,
                      at::Tensor (*fresh)(const Impl&, const at::Tensor&),
                      ir::ModuleForward forward = unary_forward<Impl>()) {
  ir::ModuleKind kind{name, typeid(Impl), std::move(forward), std::move(extra_repr), ""};
  kind.fresh_forward = unary_fresh_forward<Impl>(fresh);
  ir::ModuleRegistry::instance().add(std::move(kind));
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
