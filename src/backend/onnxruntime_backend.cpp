// The `onnxruntime` BackendConfig: quantize what ONNX Runtime's QDQ fusion
// (CPU execution provider) turns into integer kernels, and nothing else, so
// a model exported as ONNX QDQ (qfx/io/onnx_export.h) runs every
// quantized op in int8 and every other op in float without a Q/DQ pair
// around it. From ONNX Runtime's QDQ documentation and its selectors:
//   Conv (+ Relu/Clip made redundant by the QuantizeLinear) -> QLinearConv
//   Gemm / MatMul                                          -> QGemm / QLinearMatMul
//   Add, Mul                                               -> QLinearAdd / QLinearMul
//   AveragePool, GlobalAveragePool                         -> QLinearAveragePool / QLinearGlobalAveragePool
//   Concat                                                 -> QLinearConcat
//   Sigmoid, LeakyRelu                                     -> QLinearSigmoid / QLinearLeakyRelu
//   MaxPool, Resize, Reshape, Transpose, Flatten, Squeeze, -> run on the integers (Q/DQ dropped)
//   Unsqueeze, Gather
// Activations uint8 and weights int8 with float bias (the exporter quantizes
// the bias to int32 at input scale x weight scale): ONNX Runtime's U8S8, the
// form its CPU kernels are fastest in. Weights must be symmetric (zero point
// 0) for ONNX Runtime to fuse them, which the qconfig decides: the default
// onednn and qnnpack mappings' weight observers are symmetric.
// Left float: BatchNorm alone (folded into the conv by fusion), LayerNorm,
// Softmax (ONNX Runtime's QLinearSoftmax was measured up to 50 output steps
// off), Tanh, Hardswish, Hardsigmoid, GELU (no integer kernel).

#include "qfx/backend/builtin_backends.h"

#include "common_operator_configs.h"

#include "qfx/quant/qconfig_mapping.h"

#include <string>

namespace qfx::backend {

BackendConfig get_onnxruntime_backend_config() {
  using namespace detail;  // NOLINT: the op-family builders
  const DTypeConfigs weighted = {{c10::kQUInt8, c10::kQUInt8, c10::kQInt8, c10::kFloat}};
  const DTypeConfigs non_weighted = {{c10::kQUInt8, c10::kQUInt8}};
  BackendConfig config("onnxruntime");
  config.set_backend_pattern_configs(conv_configs(weighted))
      .set_backend_pattern_configs(linear_configs(weighted))
      .set_backend_pattern_configs(binary_op_configs(weighted))
      .set_backend_pattern_config(cat_config(non_weighted))
      .set_backend_pattern_configs(share_qparams_op_configs(non_weighted));
  for (const char* op : {"torch.nn.LeakyReLU", "torch.nn.functional.leaky_relu"}) {
    config.set_backend_pattern_config(op_config(op, non_weighted));
  }
  for (const auto& [op, observer] : quant::fixed_qparams_op_observers()) {
    if (op != "torch.nn.Sigmoid" && op != "torch.sigmoid" && op != "sigmoid" && op != "sigmoid_") continue;
    config.set_backend_pattern_config(op_config(op, non_weighted)
                                          ._set_overwrite_output_fake_quantize(
                                              quant::ObserverSpec("FixedQParamsFakeQuantize", {{"observer", observer}}))
                                          ._set_overwrite_output_observer(observer));
  }
  return config;
}

}  // namespace qfx::backend
