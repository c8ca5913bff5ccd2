// convert_and_export: convert the calibrated model, write it, and keep only a
// file that runs: a TorchScript file runs once on a calibration batch first,
// and a node it fails at is left float and the model converted again.

#include "qfx/accuracy/sensitivity.h"
#include "qfx/io/torchscript_export.h"
#include "qfx/passes/prepare_state.h"
#include "qfx/pipeline.h"

#include <chrono>
#include <set>

namespace qfx {
namespace {

double seconds_since(std::chrono::steady_clock::time_point& start) {
  auto now = std::chrono::steady_clock::now();
  double s = std::chrono::duration<double>(now - start).count();
  start = now;
  return s;
}

/// Leaves the node an exported model failed at float, when that can help:
/// a LibTorch kernel limit qfx knows (always, with a warning) or any failure
/// under fallback_on_failure; otherwise rethrows the failure.
void leave_failed_node_float(const io::ExportedRunError& e, const ir::GraphModule& converted,
                             const ir::GraphModule& calibrated, std::set<std::string>& float_nodes,
                             const ExportOptions& how) {
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

Exported convert_and_export(const ir::GraphModule& calibrated, const QuantizeOptions& options,
                            const ExportOptions& how) {
  QuantizeOptions converting = options;
  converting.reference = options.reference || how.onnx;  // ONNX's QDQ form is made from the reference model
  std::set<std::string> float_nodes;
  Exported out;
  auto clock = std::chrono::steady_clock::now();
  for (;;) {
    out.model = calibrated.deep_copy();
    leave_float(*out.model, float_nodes);
    convert(*out.model, converting);
    out.convert_s += seconds_since(clock);
    try {
      if (how.onnx) {
        io::export_onnx(*out.model, how.example, how.path, how.onnx_options, how.outputs);
      } else {
        io::TorchScriptOptions script;
        script.check_inputs = how.check;
        io::export_torchscript(*out.model, how.path, how.outputs, script);
      }
      out.export_s += seconds_since(clock);
      return out;
    } catch (const io::ExportedRunError& e) {
      leave_failed_node_float(e, *out.model, calibrated, float_nodes, how);
    }
  }
}

}  // namespace qfx
