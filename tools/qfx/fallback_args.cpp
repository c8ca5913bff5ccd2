// `qfx quantize --max-drop`: the options, the search on the calibrated
// model, what it says on stderr and writes.

#include "fallback_args.h"
#include "outputs.h"

#include "qfx/accuracy/fallback.h"
#include "qfx/quant/qconfig_json.h"
#include "qfx/quantize.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

namespace qfx::cli {

void add_fallback_options(CLI::App& cmd, FallbackArgs& args) {
  cmd.add_option("--eval", args.eval, "labelled data --max-drop / --max-float-nodes score top-1 on");
  cmd.add_option("--eval-batches", args.eval_batches, "score on at most this many batches of --eval (default: all)");
  cmd.add_option("--max-drop", args.max_drop,
                 "leave nodes float until top-1 on --eval is within this many points of float (kernel faults "
                 "first, then the most damaging and most sensitive nodes, then give back those not needed); "
                 "writes the QConfigMapping that makes that choice (--write-qconfig); a budget that cannot be met "
                 "exits 1 with only --report written");
  cmd.add_option("--max-float-nodes", args.max_float_nodes,
                 "leave at most this many nodes float (alone: the N most important that help)");
  cmd.add_option("--max-trials", args.max_trials,
                 "--max-drop: score at most this many trial models (default: as many as the search can take, "
                 "1 + 3 per candidate + 2 log2 of them)");
  cmd.add_flag("--best-effort", args.best_effort,
               "--max-drop: write the best model found even when the budget is not met, and exit 0");
  cmd.add_option("--write-qconfig", args.write_qconfig,
                 "where --max-drop / --max-float-nodes write the QConfigMapping JSON (default: the output's name "
                 "with .qconfig.json)")
      ->check(output_file());
}

bool falls_back(const FallbackArgs& args) { return args.max_drop >= 0 || args.max_float_nodes >= 0; }

std::string fallback_qconfig_path(const FallbackArgs& args, const std::string& output) {
  if (!falls_back(args) || !args.write_qconfig.empty()) return args.write_qconfig;
  return std::filesystem::path(output).replace_extension(".qconfig.json").string();
}

namespace {

void print_result(const FallbackResult& result, const FallbackArgs& args) {
  char line[512];
  std::snprintf(line, sizeof(line),
                "fallback: float top-1 %.2f%%, all int8 %.2f%%, with %zu node(s) float %.2f%% (%s); %lld trials of "
                "%lld candidates%s\n",
                result.float_score, result.quantized_score, result.steps.size(), result.score,
                args.max_drop < 0 ? "no --max-drop"
                : result.met      ? "within --max-drop"
                                  : "over --max-drop",
                static_cast<long long>(result.trials), static_cast<long long>(result.candidates),
                result.out_of_trials ? ", stopped at --max-trials" : "");
  std::cerr << line;
  for (const FallbackStep& step : result.steps) {
    std::string fault = step.kernel_gap > 1 ? ", kernel fault: " + std::to_string(step.kernel_gap) + " steps" : "";
    std::snprintf(line, sizeof(line), "  left float: %s (%s), top-1 %+.2f points%s\n", step.node.name.c_str(),
                  step.node.target.c_str(), step.gain, fault.c_str());
    std::cerr << line;
  }
}

}  // namespace

nlohmann::json fall_back_to_float(ir::GraphModule& calibrated, const ir::GraphModule& float_model,
                                  const quant::QConfigMapping& mapping, const backend::BackendConfig& backend,
                                  const FallbackArgs& args, const DataArgs& data_args, const std::string& output,
                                  bool quiet, const io::OutputOptions& outputs) {
  std::vector<LabelledBatch> batches =
      load_batches(args.eval, data_args, kTrialBatchSize, args.eval_batches, "evaluation data", quiet);
  auto convert = [&backend](ir::GraphModule& gm) { convert_fx(gm, backend); };
  auto to_reference = [&backend](ir::GraphModule& gm) { convert_to_reference_fx(gm, backend); };
  QuantizationTrials trials(float_model, calibrated, convert, TrialMetric::kTop1, std::move(batches), to_reference);
  FallbackOptions options;
  options.max_drop = args.max_drop >= 0 ? args.max_drop : -INFINITY;  // --max-float-nodes alone: as many as it allows
  options.max_float_nodes = args.max_float_nodes;
  options.max_trials = args.max_trials;
  FallbackResult result = fall_back(trials, options);
  print_result(result, args);
  leave_float(calibrated, result.float_nodes());
  quant::QConfigMapping chosen = mapping_with_float_nodes(mapping, calibrated, result.float_nodes());
  if (result.met || args.max_drop < 0 || args.best_effort) {
    io::write_output(fallback_qconfig_path(args, output), quant::qconfig_mapping_to_json(chosen).dump(1) + "\n",
                     outputs);
  }
  return result.to_json();
}

std::string missed_budget(const FallbackArgs& args, const nlohmann::json& section, const std::string& report) {
  char line[512];
  std::snprintf(line, sizeof(line),
                "--max-drop %g not met: float top-1 %.2f%%, best %.2f%% with %zu node(s) float after %lld trials%s",
                args.max_drop, section["float"].get<double>(), section["final"].get<double>(),
                section["float_nodes"].size(), static_cast<long long>(section["trials"].get<int64_t>()),
                section["out_of_trials"].get<bool>() ? " (stopped at --max-trials)" : "");
  std::string out = line;
  out += report.empty() ? "; nothing written" : "; only " + report + " written";
  return out + " (--best-effort writes the model anyway)";
}

}  // namespace qfx::cli
