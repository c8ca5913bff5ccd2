#pragma once
// `qfx quantize`'s accuracy-driven fallback options (--eval, --max-drop,
// --max-float-nodes, --max-trials, --best-effort, --write-qconfig) and the
// search they run (qfx/accuracy/fallback.h).

#include "data_args.h"

#include "qfx/backend/backend_config.h"
#include "qfx/io/output_file.h"
#include "qfx/ir/graph_module.h"
#include "qfx/quant/qconfig_mapping.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>

#include <string>

namespace qfx::cli {

struct FallbackArgs {
  std::string eval, write_qconfig;
  int64_t eval_batches = 0;      ///< 0: all
  double max_drop = -1;          ///< < 0: not asked
  int64_t max_float_nodes = -1;  ///< < 0: no limit
  int64_t max_trials = -1;       ///< < 0: as many as the search can take
  bool best_effort = false;      ///< a missed budget still writes the model, exit 0
};

/// Adds the options to `cmd`.
void add_fallback_options(CLI::App& cmd, FallbackArgs& args);

/// Whether a fallback is asked (--max-drop or --max-float-nodes).
bool falls_back(const FallbackArgs& args);

/// Where the fallback writes the QConfigMapping: --write-qconfig, else beside
/// `output` (`out.pt` -> `out.qconfig.json`); "" without a fallback.
std::string fallback_qconfig_path(const FallbackArgs& args, const std::string& output);

/// The search on `calibrated` (a prepared, calibrated model) against
/// `float_model`, scored on --eval: leaves its nodes float in `calibrated`,
/// writes the QConfigMapping that makes the same choice, says on stderr what
/// each node left float gives, and returns the report's "fallback" section
/// ({"met": false} when the budget is missed).
nlohmann::json fall_back_to_float(ir::GraphModule& calibrated, const ir::GraphModule& float_model,
                                  const quant::QConfigMapping& mapping, const backend::BackendConfig& backend,
                                  const FallbackArgs& args, const DataArgs& data_args, const std::string& output,
                                  bool quiet, const io::OutputOptions& outputs);

/// The one-line error of a missed budget (`section`: fall_back_to_float's).
std::string missed_budget(const FallbackArgs& args, const nlohmann::json& section, const std::string& report);

}  // namespace qfx::cli
