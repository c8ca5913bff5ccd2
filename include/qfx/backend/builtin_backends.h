#pragma once
/// \file
/// The built-in BackendConfigs of `torch.ao.quantization.backend_config`:
/// the same patterns, dtype configs, observation types and module mappings
/// as PyTorch 1.13 (onednn as PyTorch 2.x defines it, on 1.13's common op
/// configs; executorch with 1.13's share-qparams loop fixed as upstream).

#include "qfx/backend/backend_config.h"

#include <string>
#include <vector>

namespace qfx::backend {

/// fbgemm and qnnpack's union: what PyTorch's native quantized ops run.
BackendConfig get_native_backend_config();
BackendConfig get_fbgemm_backend_config();
/// quint8 ops, plus qint8 symmetric ops with XNNPACK's constraints.
BackendConfig get_qnnpack_backend_config();
BackendConfig get_x86_backend_config();
/// fbgemm-like, plus conv + add (+ relu) and linear + leaky_relu / tanh fusions.
BackendConfig get_onednn_backend_config();
BackendConfig get_executorch_backend_config();
/// qint8 everywhere, plus `torch.addmm`.
BackendConfig get_tensorrt_backend_config();
/// qfx's: what ONNX Runtime's QDQ fusion runs as integer kernels (quint8
/// activations, qint8 weights), for models exported as ONNX QDQ.
BackendConfig get_onnxruntime_backend_config();

/// The names `get_backend_config` knows: native, fbgemm, qnnpack, x86,
/// onednn, executorch, tensorrt, onnxruntime.
std::vector<std::string> builtin_backend_names();

/// A built-in config by name; c10::Error listing the names if unknown.
BackendConfig get_backend_config(const std::string& name);

}  // namespace qfx::backend
