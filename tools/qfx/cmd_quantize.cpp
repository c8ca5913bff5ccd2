// `qfx quantize MODEL.pt -o OUT.pt`: import, prepare_fx (or prepare_qat_fx
// and optionally training), calibrate on data (qfx/io/data_source.h),
// convert_fx (or convert_to_reference_fx), export TorchScript; optionally a
// per-node JSON report with the time of each stage, and its HTML page.

#include "commands.h"
#include "config_args.h"
#include "data_args.h"
#include "dist_args.h"
#include "fallback_args.h"
#include "onnx_args.h"
#include "outputs.h"
#include "qat_training.h"

#include "qfx/passes/custom_config_json.h"
#include "qfx/io/data_source.h"
#include "qfx/io/tensor_io.h"
#include "qfx/io/onnx_export.h"
#include "qfx/passes/prepare_state.h"
#include "qfx/quant/qconfig.h"
#include "qfx/accuracy/numeric_compare.h"
#include "qfx/pipeline.h"
#include "qfx/quantize.h"
#include "qfx/report/quantize_report.h"
#include "qfx/report/report_html.h"
#include "qfx/accuracy/fallback.h"
#include "qfx/quant/qconfig_json.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <c10/core/InferenceMode.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

namespace qfx::cli {
namespace {

struct Options {
  std::string model, output, backend = "native", qconfig = "default", engine = "onednn", calib, report, report_html;
  std::string prepare_custom_config;
  std::string convert_custom_config;
  int64_t calib_batches = 0;  // 0: all
  FallbackArgs fallback;
  DataArgs data_args;
  TrainArgs train;
  OnnxArgs onnx;
  DistArgs dist;
  bool dynamic = false, reference = false, print = false, quiet = false, force = false;
  bool equalize = false, correct_bias = false, adaround = false, fallback_on_failure = false;
  int64_t adaround_iterations = 500;
};

class Stopwatch {
 public:
  double lap() {
    auto now = std::chrono::steady_clock::now();
    double s = std::chrono::duration<double>(now - start_).count();
    start_ = now;
    return s;
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

/// The calibration data as the library reads it, with progress labelled
/// `label`: this rank's batches (the others' are skipped unread).
Batches calibration_batches(const Options& o, const std::string& label, Ranks* ranks = nullptr) {
  return [&o, label, ranks](const std::function<void(const Batch&)>& each) {
    std::function<bool(int64_t)> wanted;
    if (ranks != nullptr) wanted = [ranks](int64_t index) { return ranks->owns(index); };
    for_each_calibration_batch(
        o.calib, o.data_args, o.calib_batches, label, o.quiet, [&](const io::Batch& batch) { each(batch.inputs); },
        wanted);
  };
}

/// Runs the prepared model on this rank's calibration batches until every
/// rank is done. Returns this rank's first batch, which the written model
/// runs once.
Batch calibrate_ranks(ir::GraphModule& gm, const Options& o, Ranks& ranks) {
  Batch first;
  Batches batches = calibration_batches(o, "calibrate", &ranks);
  calibrate(gm, [&](const std::function<void(const Batch&)>& each) {
    batches([&](const Batch& batch) {
      if (first.empty()) first = batch;
      each(batch);
    });
  });
  if (ranks.group() != nullptr) ranks.group()->barrier();
  return first;
}

quant::QConfigMapping mapping_for(const Options& o) {
  if (o.dynamic) {
    // What the backend quantizes dynamically (Linear, LinearReLU, ...); the rest stays float. A global qconfig,
    // as PyTorch's users write it: per-type entries would make fusion refuse conv-relu or linear-relu pairs
    // whose two types got different qconfigs.
    return quant::QConfigMapping().set_global(*quant::qconfig_preset("default_dynamic_qconfig"));
  }
  if (o.qconfig == "qat") return qconfig_mapping_from_arg("qat:" + o.engine);
  if (o.qconfig == "default") return qconfig_mapping_from_arg("default:" + o.engine);
  return qconfig_mapping_from_arg(o.qconfig);
}

/// `--qconfig qat` / `qat:ENGINE`: prepare_qat_fx, so fake quantization and
/// folded batch norms run through `--train` (training mode) and calibration
/// (eval mode: batch-norm statistics frozen).
bool is_qat(const Options& o) { return o.qconfig == "qat" || o.qconfig.rfind("qat:", 0) == 0; }

/// What the library's pipeline does, as the options say.
QuantizeOptions pipeline_options(const Options& o) {
  QuantizeOptions q;
  q.qconfig_mapping = mapping_for(o);
  q.backend_config = backend_from_arg(o.backend);
  if (!o.prepare_custom_config.empty()) q.prepare_custom_config = load_prepare_custom_config(o.prepare_custom_config);
  if (!o.convert_custom_config.empty()) q.convert_custom_config = load_convert_custom_config(o.convert_custom_config);
  for (const std::string& name : q.prepare_custom_config.preserved_attributes) {  // kept into the output file
    q.convert_custom_config.preserved_attributes.push_back(name);
  }
  q.qat = is_qat(o);
  q.reference = o.reference;
  q.equalize = o.equalize;
  q.correct_bias = o.correct_bias;
  q.adaround = o.adaround;
  q.adaround_iterations = o.adaround_iterations;
  return q;
}

/// A missed --max-drop writes only --report (when asked): the search's
/// record, without a model.
void write_missed_budget_report(const Options& o, const nlohmann::json& report, io::OutputOptions outputs) {
  if (o.report.empty()) return;
  io::OutputBatch batch;
  outputs.batch = &batch;
  io::write_output(o.report, report.dump(1) + "\n", outputs);
  batch.commit();
}

/// The model files' sizes, for the report's table: the float model's, and
/// the int8 model's as staged (every output is written at the end).
nlohmann::json size_rows(const Options& o, const io::OutputOptions& outputs) {
  nlohmann::json rows = nlohmann::json::array();
  rows.push_back({{"name", "float"}, {"file", o.model}, {"size_bytes", std::filesystem::file_size(o.model)}});
  int64_t staged = outputs.batch != nullptr ? outputs.batch->staged_size(o.output) : -1;
  if (o.output != "-" && staged >= 0) rows.push_back({{"name", "int8"}, {"file", o.output}, {"size_bytes", staged}});
  return rows;
}

/// `--report-html`: the report with the sizes and, when there is calibration
/// data, the per-layer comparison of the float model (a copy of it as
/// imported) and the converted one on up to four of its batches.
void write_html_report(const ir::GraphModule& converted, ir::GraphModule* float_model, nlohmann::json report,
                       const Options& o, const io::OutputOptions& outputs) {
  report["title"] = "qfx quantize " + std::filesystem::path(o.model).filename().string();
  report["models"] = size_rows(o, outputs);
  if (float_model != nullptr) {
    float_model->root().eval();
    NumericComparison comparison(*float_model, graph_activations(converted));
    io::DataOptions options = o.data_args.resolved();
    options.max_batches = 4;
    auto source = io::open_data(o.calib, options);
    while (auto batch = source->next()) comparison.add(batch->inputs);
    report["compare"] = comparison.to_json();
  }
  io::write_output(o.report_html, report_html(report), outputs);
}

void check_options(const Options& o) {
  TORCH_CHECK(o.train.data.empty() || is_qat(o), "--train needs --qconfig qat (or qat:ENGINE)");
  TORCH_CHECK(!o.dynamic || o.qconfig == "default",
              "--dynamic sets the QConfigMapping (default_dynamic_qconfig) and --qconfig another: give one of them "
              "(a dynamic qconfig in a --qconfig file quantizes dynamically too)");
  TORCH_CHECK(!(o.equalize || o.correct_bias || o.adaround) || !(is_qat(o) || o.dynamic),
              "--equalize, --adaround and --correct-bias are for post-training static quantization, not with "
              "--qconfig qat or --dynamic");
  TORCH_CHECK(!(o.correct_bias || o.adaround) || !o.calib.empty(),
              "--correct-bias and --adaround need calibration data: pass --calib DATA");
  TORCH_CHECK(!falls_back(o.fallback) || (!o.fallback.eval.empty() && !o.calib.empty() && !is_qat(o) && !o.dynamic),
              "--max-drop and --max-float-nodes need --eval DATA (labelled) and --calib DATA, for post-training "
              "static quantization");
  TORCH_CHECK(!falls_back(o.fallback) || o.output != "-" || !o.fallback.write_qconfig.empty(),
              "--max-drop with -o - needs --write-qconfig FILE");
  TORCH_CHECK(o.dynamic || !o.calib.empty() || !o.train.data.empty(),
              "static quantization needs calibration data: pass --calib DATA (or --train DATA, or --dynamic)");
}

/// The work of one rank: import, prepare, train, calibrate; rank 0 (or the
/// only process) then converts and stages its outputs. Returns what --print
/// prints once they are written.
std::string quantize(const Options& o, Ranks& ranks, const io::OutputOptions& outputs,
                     const std::vector<c10::IValue>& example, bool onnx) {
  c10::InferenceMode no_autograd(o.train.data.empty());  // training needs autograd from the import on
  use_engine(o.engine);
  const QuantizeOptions q = pipeline_options(o);

  Stopwatch clock;
  nlohmann::json timings;
  auto gm = load_for_quantization(o.model, q);
  if (!o.prepare_custom_config.empty()) {
    check_custom_config_modules(*gm, q.prepare_custom_config, o.prepare_custom_config,
                                "the model file '" + o.model +
                                    "' does not call as a graph of its own (a leaf such "
                                    "as Linear or Conv2d is quantized in place, and torch.jit.freeze inlines modules)");
  }
  std::vector<ReportNode> float_nodes = report_nodes_of(*gm);
  timings["import_s"] = clock.lap();
  // The float model as imported, for the HTML report's comparison.
  std::unique_ptr<ir::GraphModule> float_copy =
      (!o.report_html.empty() && !o.calib.empty()) || falls_back(o.fallback) ? gm->deep_copy() : nullptr;
  improve_float_model(*gm, q, calibration_batches(o, "measure"));
  prepare(*gm, q);
  if (ranks.group() != nullptr) dist::check_mergeable(*gm);
  timings["prepare_s"] = clock.lap();
  if (!o.train.data.empty()) {
    train_qat(*gm, o.train, o.data_args.resolved(), o.quiet, ranks.group());
    timings["train_s"] = clock.lap();
  }
  torch::NoGradGuard no_grad;
  Batch check;  // what the written model runs once before it is kept
  if (!o.calib.empty()) check = calibrate_ranks(*gm, o, ranks);
  timings["calibrate_s"] = clock.lap();
  if (!o.calib.empty() && ranks.group() != nullptr) {
    dist::merge_observers(*gm, *ranks.group());
    timings["merge_s"] = clock.lap();
  }
  if (!ranks.writes()) return "";  // rank 0 converts and writes
  ranks.wait_for_workers();
  nlohmann::json fallback;
  if (falls_back(o.fallback)) {
    fallback = fall_back_to_float(*gm, *float_copy, q.qconfig_mapping, q.backend_config, o.fallback, o.data_args,
                                  o.output, o.quiet, outputs);
    timings["fallback_s"] = clock.lap();
  }
  nlohmann::json nodes = quantization_report(*gm, float_nodes);
  if (o.fallback.max_drop >= 0 && !fallback["met"].get<bool>() && !o.fallback.best_effort) {
    write_missed_budget_report(o,
                               {{"schema_version", kReportSchemaVersion},
                                {"model", o.model},
                                {"nodes", nodes},
                                {"timings", timings},
                                {"fallback", fallback}},
                               outputs);
    TORCH_CHECK(false, missed_budget(o.fallback, fallback, o.report));
  }
  clock.lap();
  ExportOptions how;
  how.path = o.output;
  how.onnx = onnx;
  how.onnx_options = o.onnx.options;
  how.example = example;
  how.check = check;
  how.fallback_on_failure = o.fallback_on_failure;
  how.outputs = outputs;
  Exported written = convert_and_export(*gm, q, how);
  gm = std::move(written.model);
  timings["convert_s"] = written.convert_s;
  timings["export_s"] = written.export_s;
  note_static_int8(!o.reference && has_static_int8_conv_or_linear(*gm));
  clock.lap();
  nlohmann::json report = {
      {"schema_version", kReportSchemaVersion}, {"model", o.model}, {"nodes", nodes}, {"timings", timings}};
  if (!fallback.is_null()) report["fallback"] = fallback;
  if (!o.report.empty()) io::write_output(o.report, report.dump(1) + "\n", outputs);
  if (!o.report_html.empty()) write_html_report(*gm, float_copy.get(), report, o, outputs);
  return o.print ? gm->to_string() + "\n" : "";
}

void run(const Options& given) {
  check_options(given);
  bool onnx = writes_onnx(given.onnx, given.output);
  std::vector<c10::IValue> example;  // ONNX: the inputs of the run that gives shapes
  if (onnx) {
    example =
        example_inputs(given.onnx, given.calib.empty() ? given.train.data : given.calib, given.data_args.resolved());
  }
  io::OutputOptions outputs = check_outputs(
      {given.output, given.report, given.report_html, fallback_qconfig_path(given.fallback, given.output)},
      {given.model, given.calib, given.train.data, given.backend, given.qconfig, given.prepare_custom_config,
       given.convert_custom_config, given.fallback.eval},
      given.force, given.print);
  Ranks ranks(given.dist);
  Options o = given;
  o.quiet = o.quiet || !ranks.writes();
  TORCH_CHECK(ranks.group() == nullptr || !(o.correct_bias || o.adaround),
              "--correct-bias and --adaround run in one process: not with --workers, --dist-url or torchrun");
  io::OutputBatch batch;  // the model, reports and QConfigMapping: all or nothing
  outputs.batch = &batch;
  try {
    std::string printed = quantize(o, ranks, outputs, example, onnx);
    if (ranks.writes()) batch.commit();
    std::cout << printed;
  } catch (const c10::Error& e) {
    if (ranks.group() == nullptr) throw;
    TORCH_CHECK(false, ranks.failure_of(e));
  }
}

}  // namespace

void add_quantize_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("quantize", "Quantize a model: prepare, calibrate, convert, export");
  cmd->add_option("model", o->model, "model file (TorchScript .pt or torch.export .pt2)")->required();
  cmd->add_option("-o,--output", o->output,
                  "the quantized model to write: TorchScript, or ONNX QDQ for a .onnx name or --format onnx (- for "
                  "standard output)")
      ->required()
      ->check(output_file());
  cmd->add_option("--backend", o->backend, "built-in BackendConfig name or JSON file (default: native)");
  cmd->add_option("--qconfig", o->qconfig,
                  "default (the engine's default QConfigMapping), default:ENGINE, qat (prepare_qat_fx with the "
                  "engine's QAT mapping), qat:ENGINE or a QConfigMapping JSON file");
  cmd->add_option("--engine", o->engine, "quantized engine the weights are packed for: onednn or qnnpack");
  cmd->add_option("--calib", o->calib,
                  "calibration data: a torch.save file (a tensor, batches along dim 0, or a list of batches), an IDX "
                  "images file, or an image folder");
  cmd->add_option("--calib-batches", o->calib_batches, "use at most this many batches (default: all)");
  cmd->add_option("--train", o->train.data,
                  "with --qconfig qat: fine-tune the prepared classifier on this labelled data (IDX with labels, "
                  "image folder; cross-entropy, Adam) before converting");
  cmd->add_option("--epochs", o->train.epochs, "--train: passes over the data (default: 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  cmd->add_option("--lr", o->train.lr, "--train: Adam learning rate (default: 1e-5)");
  add_data_options(*cmd, o->data_args, "items per calibration batch (default: 8)");
  add_dist_options(*cmd, o->dist);
  cmd->add_flag("-q,--quiet", o->quiet, "no progress on stderr");
  cmd->add_option("--prepare-custom-config", o->prepare_custom_config,
                  "PrepareCustomConfig JSON (PyTorch's to_dict() keys): standalone and non-traceable modules, "
                  "input/output_quantized_idxs, float_to_observed_custom_module_class, preserved_attributes (kept "
                  "in the output file)");
  cmd->add_option("--convert-custom-config", o->convert_custom_config,
                  "ConvertCustomConfig JSON: observed_to_quantized_custom_module_class, preserved_attributes");
  cmd->add_flag("--dynamic", o->dynamic,
                "dynamic quantization (default_dynamic_qconfig) of what the backend quantizes dynamically: Linear, "
                "LSTM, GRU and the RNN cells; the rest stays float; no calibration");
  cmd->add_flag("--equalize", o->equalize,
                "cross-layer equalization before observation: consecutive conv/linear layers (through ReLU) scaled "
                "so each channel's weight range matches (same float function)");
  cmd->add_flag("--correct-bias", o->correct_bias,
                "bias correction before observation: each quantized layer's bias absorbs the mean shift its weight "
                "quantization causes, measured on the calibration data");
  add_fallback_options(*cmd, o->fallback);
  cmd->add_flag("--adaround", o->adaround,
                "learned rounding before observation: each quantized weight rounded up or down as minimizes its "
                "layer's output error on the calibration data (AdaRound)");
  cmd->add_option("--adaround-iters", o->adaround_iterations, "--adaround: Adam steps per layer (default: 500)")
      ->check(CLI::Range(int64_t{1}, int64_t{10000000}));
  cmd->add_flag("--fallback-on-failure", o->fallback_on_failure,
                "when the written model fails on its calibration batch (it runs once before it is kept), leave the "
                "node it fails at float and convert again, instead of stopping with the error");
  cmd->add_flag("--reference", o->reference, "write the reference model (quantize/dequantize + float ops)");
  cmd->add_option("--report", o->report, "write a per-node JSON report with stage timings")->check(output_file());
  cmd->add_option(
         "--report-html", o->report_html,
         "write a self-contained HTML report: nodes and qparams, sizes, per-layer SQNR on the calibration data")
      ->check(output_file());
  cmd->add_flag("--print", o->print, "print the converted model");
  add_onnx_options(*cmd, o->onnx);
  add_force_flag(*cmd, o->force);
  cmd->callback([o, &action] { action = [o] { run(*o); }; });
}

}  // namespace qfx::cli
