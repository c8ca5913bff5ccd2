// `qfx sensitivity MODEL.pt --calib DATA --data LABELLED`: prepares and
// calibrates the model once, then scores, for each quantizable node, the
// model with only that node quantized and the one with only that node float
// (qfx/accuracy/sensitivity.h); a ranked table, JSON, and a chart in the HTML report.

#include "commands.h"
#include "config_args.h"
#include "data_args.h"
#include "outputs.h"

#include "qfx/io/output_file.h"
#include "qfx/io/model_file.h"
#include "qfx/ir/interpreter.h"
#include "qfx/quantize.h"
#include "qfx/report/report_html.h"
#include "qfx/accuracy/sensitivity.h"

#include <c10/core/InferenceMode.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>

namespace qfx::cli {
namespace {

struct Options {
  std::string model, calib, data, metric = "top1", backend = "native", qconfig = "default", engine = "onednn";
  std::string json, report_html;
  int64_t calib_batches = 0, limit_batches = 0;
  DataArgs data_args;
  bool quiet = false, force = false;
};

void run(const Options& o) {
  io::OutputOptions outputs =
      check_outputs({o.json, o.report_html}, {o.model, o.calib, o.data, o.backend, o.qconfig}, o.force, true);
  c10::InferenceMode no_autograd;
  use_engine(o.engine);
  backend::BackendConfig backend = backend_from_arg(o.backend);
  quant::QConfigMapping mapping = qconfig_mapping_from_arg(o.qconfig == "default" ? "default:" + o.engine : o.qconfig);
  TrialMetric metric = o.metric == "top1" ? TrialMetric::kTop1 : TrialMetric::kSqnr;
  std::vector<LabelledBatch> batches =
      load_batches(o.data, o.data_args, kTrialBatchSize, o.limit_batches, "data", o.quiet);

  auto float_model = io::load_model(o.model);
  std::unique_ptr<ir::GraphModule> calibrated = float_model->deep_copy();
  prepare_fx(*calibrated, mapping, backend);
  ir::Interpreter interpreter(*calibrated);
  for_each_calibration_batch(o.calib, o.data_args, o.calib_batches, "calibrate", o.quiet,
                             [&](const io::Batch& batch) { interpreter.run(batch.inputs); });
  auto convert = [&backend](ir::GraphModule& gm) { convert_fx(gm, backend); };
  auto to_reference = [&backend](ir::GraphModule& gm) { convert_to_reference_fx(gm, backend); };
  QuantizationTrials trials(*float_model, *calibrated, convert, metric, std::move(batches), to_reference);
  SensitivityReport report = analyze_sensitivity(trials);

  nlohmann::json json = report.to_json();
  json["model"] = o.model;
  io::OutputBatch batch;  // the JSON and the page: both or neither
  outputs.batch = &batch;
  if (!o.json.empty()) io::write_output(o.json, json.dump(1) + "\n", outputs);
  if (!o.report_html.empty()) {
    nlohmann::json page = {{"title", "qfx sensitivity " + std::filesystem::path(o.model).filename().string()},
                           {"model", o.model},
                           {"sensitivity", report.to_json()}};
    io::write_output(o.report_html, report_html(page), outputs);
  }
  batch.commit();
  std::cout << report.table();  // after the outputs: a failed write prints nothing
}

}  // namespace

void add_sensitivity_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "sensitivity", "Per-node sensitivity: the score with only that node quantized, and with only that node float");
  cmd->add_option("model", o->model, "model file (TorchScript .pt or torch.export .pt2)")->required();
  cmd->add_option("--calib", o->calib, "calibration data (as qfx quantize --calib); calibrated once")->required();
  cmd->add_option("--calib-batches", o->calib_batches, "use at most this many calibration batches (default: all)");
  cmd->add_option("--data", o->data, "data the trials are scored on (labelled for top1), in batches of 32")->required();
  cmd->add_option("--limit-batches", o->limit_batches, "score on at most this many batches of --data (default: all)");
  cmd->add_option("--metric", o->metric, "top1 (accuracy, %) or sqnr (the output's SQNR against float, dB)")
      ->check(CLI::IsMember({"top1", "sqnr"}));
  cmd->add_option("--backend", o->backend, "built-in BackendConfig name or JSON file (default: native)");
  cmd->add_option("--qconfig", o->qconfig,
                  "default (the engine's default QConfigMapping), default:ENGINE or a JSON file");
  cmd->add_option("--engine", o->engine, "quantized engine: onednn or qnnpack");
  add_data_options(*cmd, o->data_args, "items per calibration batch (default: 8)");
  cmd->add_option("--json", o->json, "write the ranked table as JSON")->check(output_file());
  cmd->add_option("--report-html", o->report_html, "write an HTML page with the sensitivity chart")
      ->check(output_file());
  cmd->add_flag("-q,--quiet", o->quiet, "no progress on stderr");
  add_force_flag(*cmd, o->force);
  cmd->callback([o, &action] { action = [o] { run(*o); }; });
}

}  // namespace qfx::cli
