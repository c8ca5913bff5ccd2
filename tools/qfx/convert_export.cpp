// convert_and_export: convert the calibrated model, write it, and keep only a
// file that runs: a TorchScript file runs once on a calibration batch first,
// and a node it fails at is left float and the model converted again.

#include "convert_export.h"

#include "qfx/accuracy/sensitivity.h"
#include "qfx/io/onnx_export.h"
#include "qfx/io/torchscript_export.h"
#include "qfx/passes/prepare_state.h"
#include "qfx/quantize.h"

#include <chrono>
#include <set>

namespace qfx::cli {
namespace {

double seconds_since(std::chrono::steady_clock::time_point& start) {
  auto now = std::chrono::steady_clock::now();
  double s = std::chrono::duration<double>(now - start).count();
  start = now;
  return s;
}

/// A copy of the calibrated model with `float_nodes` left float, converted
/// (to the reference model for --reference and ONNX).
std::unique_ptr<ir::GraphModule> converted(const ir::GraphModule& calibrated, const std::set<std::string>& float_nodes,
                                           const backend::BackendConfig& backend, const PrepareCustomConfig& custom,
                                           const ConvertCustomConfig& convert_custom, bool reference) {
  std::unique_ptr<ir::GraphModule> gm = calibrated.deep_copy();
  leave_float(*gm, float_nodes);
  if (reference) {
    convert_to_reference_fx(*gm, backend, custom, convert_custom);
  } else {
    convert_fx(*gm, backend, custom, convert_custom);
  }
  return gm;
}

/// Leaves the node an exported model failed at float, when that can help:
/// a LibTorch kernel limit qfx knows (always, with a warning) or any failure
/// under --fallback-on-failure; otherwise rethrows the failure.
void leave_failed_node_float(const io::ExportedRunError& e, const ir::GraphModule& converted,
                             const ir::GraphModule& calibrated, std::set<std::string>& float_nodes,
                             const ConvertExport& how) {
  if (e.kernel_limit().empty() && !how.fallback_on_failure) {
    TORCH_CHECK(false, e.what_without_backtrace(), " (--fallback-on-failure leaves the node float)");
  }
  const ir::Node* failed = converted.graph().find_node(e.node());
  std::string name = failed != nullptr ? passes::prepared_name(*failed) : e.node();
  const ir::Node* node = calibrated.graph().find_node(name);
  TORCH_CHECK(node != nullptr && float_nodes.count(name) == 0 && passes::node_qconfig(*node).has_value(),
              e.what_without_backtrace(), " (no quantized node to leave float there)");
  float_nodes.insert(name);
  TORCH_WARN("node %", name,
             " stays float: ", e.kernel_limit().empty() ? e.what_without_backtrace() : e.kernel_limit());
}

}  // namespace

std::unique_ptr<ir::GraphModule> convert_and_export(const ir::GraphModule& calibrated, const ConvertInputs& in,
                                                    const ConvertExport& how, const io::OutputOptions& outputs,
                                                    nlohmann::json& timings) {
  std::set<std::string> float_nodes;
  auto clock = std::chrono::steady_clock::now();
  timings["convert_s"] = timings["export_s"] = 0.0;
  for (;;) {
    std::unique_ptr<ir::GraphModule> gm =
        converted(calibrated, float_nodes, in.backend, in.custom, in.convert_custom, how.reference);
    timings["convert_s"] = timings["convert_s"].get<double>() + seconds_since(clock);
    try {
      if (how.onnx) {  // ONNX's QDQ form is made from the reference model
        io::export_onnx(*gm, in.example, how.output, how.onnx_options, outputs);
      } else {
        io::TorchScriptOptions script;
        script.check_inputs = in.check;
        io::export_torchscript(*gm, how.output, outputs, script);
      }
      timings["export_s"] = timings["export_s"].get<double>() + seconds_since(clock);
      return gm;
    } catch (const io::ExportedRunError& e) {
      leave_failed_node_float(e, *gm, calibrated, float_nodes, how);
    }
  }
}

}  // namespace qfx::cli
