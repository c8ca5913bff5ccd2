#pragma once
/// \file
/// Export to ONNX: a float or reference quantized GraphModule (what
/// convert_to_reference_fx gives) as an ONNX model with explicit
/// QuantizeLinear/DequantizeLinear (QDQ) around float ops, the format ONNX
/// Runtime, TensorRT and OpenVINO quantize from.
///
/// - every `quantize_per_tensor`/`quantize_per_channel` of an activation is
///   a QuantizeLinear (uint8 or int8 zero point as the qconfig's dtype), every
///   `dequantize` a DequantizeLinear in front of each op that uses it;
/// - weights are initializers quantized once (int8 integers, scale, zero
///   point, `axis` per channel) with a DequantizeLinear; biases of quantized
///   convolutions and linear layers are int32 with scale input scale x weight
///   scale, so ONNX Runtime fuses DQ -> Conv -> Q into QLinearConv;
/// - dynamic quantization is DynamicQuantizeLinear, weight-only embeddings a
///   DequantizeLinear of their quantized table, float16 Cast pairs.
///
/// Shapes come from one run of the model on example inputs: input and
/// output shapes are declared with a symbolic batch dimension. Before it is
/// written, the model passes ONNX's full shape inference and
/// `onnx::checker::check_model`; a node without an ONNX form is an error
/// naming it, and nothing is written.
///
/// \code
///   qfx::convert_to_reference_fx(*gm);
///   qfx::io::export_onnx(*gm, {torch::rand({1, 3, 224, 224})}, "model_int8.onnx");
/// \endcode

#include "qfx/io/output_file.h"
#include "qfx/ir/graph_module.h"

#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

namespace qfx::io {

/// The opsets an export can target: those of the ONNX checker qfx links (libonnx 1.12).
inline constexpr int64_t kMinOnnxOpset = 13;
inline constexpr int64_t kMaxOnnxOpset = 17;

/// How export_onnx writes the model.
struct OnnxExportOptions {
  /// The default-domain opset, kMinOnnxOpset..kMaxOnnxOpset.
  int64_t opset = 13;
  /// Declares dim 0 of every input and output as the symbolic `batch`.
  bool dynamic_batch = true;
};

/// The checked ONNX model of `gm` (a serialized ModelProto).
/// `example_inputs` are forward()'s inputs for the run that gives shapes.
std::string onnx_model_bytes(const ir::GraphModule& gm, const std::vector<c10::IValue>& example_inputs,
                             const OnnxExportOptions& options = {});

/// Writes onnx_model_bytes() to `path` through write_output
/// (qfx/io/output_file.h): on error nothing is left at `path`.
void export_onnx(const ir::GraphModule& gm, const std::vector<c10::IValue>& example_inputs, const std::string& path,
                 const OnnxExportOptions& options = {}, const OutputOptions& output_options = {});

}  // namespace qfx::io
