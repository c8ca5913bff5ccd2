#pragma once
// The CLI's ONNX options (--format, --opset, --input-shape, --static-batch) and the example
// inputs an ONNX export runs the model on, shared by `qfx quantize` and `qfx export`.

#include "qfx/io/data_source.h"
#include "qfx/io/onnx_export.h"

#include <ATen/core/ivalue.h>
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace qfx::cli {

struct OnnxArgs {
  std::string format;       ///< "", "torchscript" or "onnx"
  std::string input_shape;  ///< "1,3,224,224": a float input of these sizes
  io::OnnxExportOptions options;
};

/// Adds --format, --opset, --input-shape and --static-batch to `cmd`.
void add_onnx_options(CLI::App& cmd, OnnxArgs& args);

/// Whether `output` is written as ONNX: --format onnx, or a `.onnx` name
/// without --format. c10::Error for an unknown --format.
bool writes_onnx(const OnnxArgs& args, const std::string& output);

/// The example inputs: a zero tensor of --input-shape when given, else the
/// first batch of `data` (opened with `options`); c10::Error naming the
/// missing option when there is neither.
std::vector<c10::IValue> example_inputs(const OnnxArgs& args, const std::string& data, io::DataOptions options);

}  // namespace qfx::cli
