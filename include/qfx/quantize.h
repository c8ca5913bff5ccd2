#pragma once
/// \file
/// The FX graph mode quantization entry points of `quantize_fx.py`, on a
/// GraphModule imported from TorchScript (qfx::io::import_torchscript).
/// They rewrite the model in place.
///
/// \code
///   auto gm = qfx::io::import_torchscript("resnet18.pt");
///   qfx::prepare_fx(*gm, qfx::quant::get_default_qconfig_mapping("onednn"));
///   qfx::ir::Interpreter calibrate(*gm);
///   for (auto& batch : batches) calibrate.run({batch});
///   qfx::convert_to_reference_fx(*gm);
/// \endcode

#include "qfx/backend/backend_config.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/graph_module.h"
#include "qfx/passes/custom_config.h"
#include "qfx/quant/qconfig_mapping.h"

namespace qfx {

/// What the importer must keep whole for `config`: standalone modules as
/// nested GraphModules, non-traceable and float custom module classes as
/// TorchScript, and the preserved root attributes.
io::ImportOptions import_options(const PrepareCustomConfig& config);

/// c10::Error `<where>: the PrepareCustomConfig names ...` when a module
/// `config` names by path (standalone, non-traceable) is not a module of
/// `model`, or is no module the graph calls (`..., which <why_not_called>`;
/// by default: the import inlined it, import with import_options(config)).
/// prepare_fx and prepare_qat_fx check this themselves.
void check_custom_config_modules(
    const ir::GraphModule& model, const PrepareCustomConfig& config, const std::string& where,
    const std::string& why_not_called = "the import inlined: import the model with qfx::import_options(config)");

/// `fuse_fx`: fuses the backend's fusion patterns (conv-bn-relu, linear-relu, ...).
void fuse_fx(ir::GraphModule& model, const backend::BackendConfig& backend_config,
             const FuseCustomConfig& fuse_custom_config = {});
void fuse_fx(ir::GraphModule& model);  ///< with the native backend config

/// `prepare_fx`: fuses, then inserts observers as `qconfig_mapping` asks and
/// `backend_config` allows. Calibrate by running the model.
void prepare_fx(ir::GraphModule& model, const quant::QConfigMapping& qconfig_mapping,
                const backend::BackendConfig& backend_config, const PrepareCustomConfig& prepare_custom_config = {});
void prepare_fx(ir::GraphModule& model, const quant::QConfigMapping& qconfig_mapping);  ///< native backend

/// `prepare_qat_fx`: puts the model in training mode, fuses keeping batch
/// norms (ConvBn2d, ...), swaps in QAT modules (nn/qat.h) and inserts
/// fake-quantize modules. Train it, then convert_fx.
void prepare_qat_fx(ir::GraphModule& model, const quant::QConfigMapping& qconfig_mapping,
                    const backend::BackendConfig& backend_config,
                    const PrepareCustomConfig& prepare_custom_config = {});

/// `convert_to_reference_fx`: the reference quantized model of a prepared
/// (and calibrated) model: quantize/dequantize nodes and reference modules.
/// `prepare_custom_config` is the one the model was prepared with.
void convert_to_reference_fx(ir::GraphModule& model, const backend::BackendConfig& backend_config,
                             const PrepareCustomConfig& prepare_custom_config = {},
                             const ConvertCustomConfig& convert_custom_config = {});
void convert_to_reference_fx(ir::GraphModule& model);  ///< native backend

/// `convert_fx`: convert_to_reference_fx, then lowering to quantized
/// modules and ops (`quantized::linear`, `quantized::conv2d_relu`, ...) with
/// weights prepacked for the current engine (`at::globalContext().qEngine()`).
void convert_fx(ir::GraphModule& model, const backend::BackendConfig& backend_config,
                const PrepareCustomConfig& prepare_custom_config = {},
                const ConvertCustomConfig& convert_custom_config = {});
void convert_fx(ir::GraphModule& model);  ///< native backend

}  // namespace qfx
