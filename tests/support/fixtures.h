#pragma once
// Access to the oracle's fixtures (tests/oracle/make_fixtures.py), whose
// directory CTest passes in QFX_FIXTURES.

#include "qfx/io/onnx_export.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <nlohmann/json.hpp>
#include <torch/nn/module.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace qfx::ir {
class GraphModule;
}

namespace qfx::test {

/// Path of a fixture file.
std::string fixture(const std::string& name);

/// Path of a file of the source tree (`examples/backends/my_backend.json`),
/// whose root CTest passes in QFX_SOURCE_DIR.
std::string source_file(const std::string& path);

/// A fixture JSON file, parsed.
nlohmann::json fixture_json(const std::string& name);

/// Largest |a - b| / max(1e-12, max |b|) over all tensors of two values with
/// the same structure (tensor, or list/tuple of tensors). Raises on a shape
/// or structure mismatch.
double max_relative_error(const c10::IValue& a, const c10::IValue& b);
/// Largest |a - b| over all tensors (quantized ones dequantized), same rules.
double max_abs_error(const c10::IValue& a, const c10::IValue& b);
/// Signal-to-quantization-noise ratio of `ours` against `expected` (the
/// lowest over their tensors, depth first), in dB; infinite when equal.
double sqnr_db(const c10::IValue& ours, const c10::IValue& expected);

/// True when a parameter or buffer anywhere under `a` and one under `b`
/// share their storage.
bool shares_storage(const torch::nn::Module& a, const torch::nn::Module& b);

}  // namespace qfx::test

namespace qfx::test {

/// The message of the c10::Error `fn` raises ("" if it raises none).
/// The record whose "case" is `name` in the fixture list `file` (c10::Error if none).
nlohmann::json fixture_case(const std::string& file, const std::string& name);

/// "at N: A vs B" for the first position where two lists differ ("" if equal).
std::string first_difference(const std::vector<std::string>& a, const std::vector<std::string>& b);

std::string error_of(const std::function<void()>& fn);

/// A float model of conv (2 -> 3 channels, 3x3, padding 1), batch norm,
/// torch.relu, flatten and linear (48 -> 5), in eval mode, for inputs of
/// shape (N, 2, 4, 4).
std::unique_ptr<ir::GraphModule> conv_bn_linear();

/// A double from Python's float.hex() (also "inf", "-inf", "nan").
double from_hex(const std::string& text);

/// Makes `name` (onednn or qnnpack) LibTorch's quantized engine while alive.
class EngineGuard {
 public:
  explicit EngineGuard(const std::string& name);
  ~EngineGuard();
  EngineGuard(const EngineGuard&) = delete;
  EngineGuard& operator=(const EngineGuard&) = delete;

 private:
  int previous_;
};

/// Turns qfx's kernel workarounds off while alive (ir/kernel_workarounds.h).
struct KernelWorkaroundsOff {
  KernelWorkaroundsOff();
  ~KernelWorkaroundsOff();
  KernelWorkaroundsOff(const KernelWorkaroundsOff&) = delete;
  KernelWorkaroundsOff& operator=(const KernelWorkaroundsOff&) = delete;
};

/// Catches c10 warnings (TORCH_WARN) while alive.
class WarningCapture {
 public:
  WarningCapture();
  ~WarningCapture();
  const std::vector<std::string>& messages() const;

 private:
  struct Handler;
  std::unique_ptr<Handler> handler_;
};

}  // namespace qfx::test

namespace qfx::test {

/// When QFX_EXPORT_DIR is set (the `oracle` CTest entry sets it), keeps an
/// exported TorchScript file with its inputs and the qfx interpreter's output
/// as `<name>.pt`, `<name>_inputs.pt`, `<name>_output.pt` and `<name>.json`,
/// for tests/oracle/check_exported.py to run in Python: Python's
/// `torch.jit.load` must give the interpreter's output within `tolerance`
/// (relative to max |output| when `relative`, else absolute) on `engine`.
/// With `host_sequence`, Python runs the model on the first 1 or 8 samples of
/// input 0 under the thread counts and batch sizes of
/// OracleExportHost.SurvivesThreadAndBatchChanges, each sample's output the
/// same bit for bit.
void keep_for_python(const std::string& name, const std::string& exported, const std::vector<c10::IValue>& inputs,
                     const c10::IValue& output, double tolerance, bool relative, const std::string& engine,
                     bool host_sequence = false);

/// When QFX_EXPORT_DIR is set, exports the reference model `reference_model`
/// to ONNX for tests/onnx/check_onnx_runtime.js to run in ONNX Runtime, as
/// `onnx/<name>.onnx` with its inputs and qfx's outputs as raw little-endian
/// files and `onnx/<name>.json`: ONNX Runtime must give the reference
/// model's output `reference` (optimizations off: the float ops between Q/DQ)
/// and the lowered model's `lowered` within `step` (one output quantization
/// step; 0: a float output; negative: not compared). An export error is kept
/// in the record instead. The export's example is `inputs`, or `example`
/// when given (other sizes than the symbolic dims the check runs with).
void keep_for_onnx(const std::string& name, const ir::GraphModule& reference_model,
                   const std::vector<c10::IValue>& inputs, const c10::IValue& reference, const c10::IValue& lowered,
                   double step, const std::vector<c10::IValue>* example = nullptr,
                   const io::OnnxExportOptions& options = {});

}  // namespace qfx::test
