#pragma once
/// \file
/// The per-node report of `qfx quantize --report`: for each node of the float
/// graph, whether it was quantized, how (static, dynamic, weight-only,
/// float16), why not, and the qparams of its inputs, output and weight, read
/// from a prepared and calibrated model.
///
/// \code
///   auto float_nodes = qfx::report_nodes_of(*gm);      // before prepare_fx
///   qfx::prepare_fx(*gm, mapping, backend);
///   ... calibrate ...
///   nlohmann::json nodes = qfx::quantization_report(*gm, float_nodes);
/// \endcode

#include "qfx/ir/graph_module.h"

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace qfx {

/// A float graph node, as the report names it: FX's name, op and target
/// (a call_module's target is the module path, `layer1.0.conv1`).
struct ReportNode {
  std::string name, op, target;
  std::string module_type;  ///< a call_module's class (`torch.nn.Conv2d`), else ""
  std::string first_input;  ///< the node its first argument is (where a fused node went), or ""
};

/// The float graph's nodes (placeholders, get_attr and output left out).
std::vector<ReportNode> report_nodes_of(const ir::GraphModule& float_model);

/// The version of the report's layout (kept in its "schema_version"): 2 since
/// "target" is FX's (a module path for call_module) and the class is "module_type".
inline constexpr int kReportSchemaVersion = 2;

/// The report's `nodes` array: one object per float node with "name", "op",
/// "target" (as FX: a call_module's module path), "module_type" (a
/// call_module's class), "quantized", "mode", "reason" (when not quantized),
/// "input_qparams" (one entry per argument, null when not observed; a tuple
/// or list argument, an LSTM's `(h, c)`, as a list of its parts),
/// "output_qparams", "weight_qparams" ({"dtype", "qscheme", "scale",
/// "zero_point"}, per-channel ones as lists, with "axis") and, for a module
/// with observers of its own (the static LSTM's gates), "internal_qparams"
/// keyed by the observer's path within the module.
nlohmann::json quantization_report(const ir::GraphModule& prepared, const std::vector<ReportNode>& float_nodes);

}  // namespace qfx
