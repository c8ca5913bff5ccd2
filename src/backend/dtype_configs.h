#pragma once
// DTypeConfigs the built-in backends share (PyTorch's module-level constants
// of native.py, qnnpack.py, onednn.py, ...).

#include "qfx/backend/backend_config.h"

namespace qfx::backend::detail {

/// quint8 activations, qint8 weights, float bias: static int8 weighted ops.
inline DTypeConfig weighted_op_int8() { return {c10::kQUInt8, c10::kQUInt8, c10::kQInt8, c10::kFloat}; }
/// quint8 in and out: ops without weights.
inline DTypeConfig default_op_quint8() { return {c10::kQUInt8, c10::kQUInt8}; }
/// float16 everywhere.
inline DTypeConfig default_op_fp16() { return {c10::kHalf, c10::kHalf, c10::kHalf, c10::kHalf}; }
/// Dynamic int8: activations quantized at run time, float output.
inline DTypeConfig default_dynamic_int8() { return {c10::kQUInt8, c10::kFloat, c10::kQInt8, c10::kFloat, true}; }
/// Dynamic float16: float16 weights, float output.
inline DTypeConfig default_dynamic_float16() { return {c10::kHalf, c10::kFloat, c10::kHalf, c10::kFloat, true}; }
/// quint8 in and out, float weight and bias (layer norm).
inline DTypeConfig input_output_only_quint8() { return {c10::kQUInt8, c10::kQUInt8, c10::kFloat, c10::kFloat}; }
/// Weight-only: float activations, quantized weight.
inline DTypeConfig weight_only(c10::ScalarType weight) { return {c10::kFloat, c10::kFloat, weight}; }

}  // namespace qfx::backend::detail
