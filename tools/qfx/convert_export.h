#pragma once
// Converting the calibrated model and writing it, kept only when the file
// runs (qfx quantize).

#include "qfx/io/onnx_export.h"
#include "qfx/io/output_file.h"
#include "qfx/ir/graph_module.h"
#include "qfx/passes/custom_config.h"
#include "qfx/backend/backend_config.h"

#include <ATen/core/ivalue.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace qfx::cli {

/// What convert_and_export works with besides the calibrated model.
struct ConvertInputs {
  const backend::BackendConfig& backend;
  const PrepareCustomConfig& custom;
  const ConvertCustomConfig& convert_custom;
  const std::vector<c10::IValue>& check;    ///< a calibration batch; empty: no check
  const std::vector<c10::IValue>& example;  ///< ONNX: the inputs of the run that gives shapes
};

/// How and where the model is written.
struct ConvertExport {
  std::string output;
  bool reference = false;            ///< convert_to_reference_fx (ONNX always)
  bool onnx = false;                 ///< ONNX QDQ, else TorchScript
  bool fallback_on_failure = false;  ///< --fallback-on-failure
  io::OnnxExportOptions onnx_options;
};

/// Converts the calibrated model and writes it to `how.output`; a
/// TorchScript file first runs once on `in.check` as its host will, and a
/// node it fails at (a LibTorch kernel limit qfx knows, or any under
/// --fallback-on-failure) is left float, with a warning, and the model
/// converted again; any other failure is an error naming the node. Returns
/// the model written; `timings` gets convert_s and export_s.
std::unique_ptr<ir::GraphModule> convert_and_export(const ir::GraphModule& calibrated, const ConvertInputs& in,
                                                    const ConvertExport& how, const io::OutputOptions& outputs,
                                                    nlohmann::json& timings);

}  // namespace qfx::cli
