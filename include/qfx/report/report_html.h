#pragma once
/// \file
/// The HTML form of a qfx report: one self-contained page (Chart.js inlined,
/// no network requests) with the model summary, the accuracy / latency / size
/// table, the per-layer SQNR chart, the sensitivity chart and the per-node
/// table.
///
/// The report is JSON with any of these keys (a missing key leaves its
/// section out): "title", "model" (path), "nodes" (quantization_report's
/// array), "timings" (seconds per stage), "compare" (NumericComparison's
/// to_json), "models" ([{"name", "file", "size_bytes", "top1", "top5",
/// "latency_ms_per_image"}]), "sensitivity" (SensitivityReport's to_json).
///
/// \code
///   nlohmann::json report = {{"title", "resnet18 int8"}, {"nodes", nodes}, {"compare", comparison.to_json()}};
///   qfx::io::write_output("report.html", qfx::report_html(report));
/// \endcode

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace qfx {

/// The page for `report`.
std::string report_html(const nlohmann::json& report);

}  // namespace qfx
