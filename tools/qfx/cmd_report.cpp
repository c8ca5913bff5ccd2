// `qfx report`: one report (JSON and/or a self-contained HTML page) from the
// JSON that `qfx quantize --report`, `qfx compare --json` and
// `qfx eval --json` write.

#include "commands.h"

#include "qfx/quant/qconfig_json.h"
#include "outputs.h"

#include "qfx/io/tensor_io.h"
#include "qfx/report/quantize_report.h"
#include "qfx/report/report_html.h"

#include <c10/util/Exception.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace qfx::cli {
namespace {

struct Options {
  std::string title = "qfx report", quantize, compare, json, html;
  std::vector<std::string> evals;  // NAME=FILE
  bool force = false;
};

/// The files the report reads.
std::vector<std::string> input_files(const Options& o) {
  std::vector<std::string> files = {o.quantize, o.compare};
  for (const std::string& spec : o.evals) files.push_back(spec.substr(spec.find('=') + 1));
  return files;
}

nlohmann::json read_json(const std::string& path, const char* option) {
  try {
    return quant::load_json_file(path);
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, option, ": ", e.what_without_backtrace());
  }
}

/// A row of the models table from `qfx eval --json` output.
nlohmann::json model_row(const std::string& spec) {
  size_t eq = spec.find('=');
  TORCH_CHECK(eq != std::string::npos && eq > 0, "--eval takes NAME=FILE.json, got '", spec, "'");
  std::string path = spec.substr(eq + 1);
  nlohmann::json eval = read_json(path, "--eval");
  TORCH_CHECK(eval.is_object() && eval.contains("top1") && eval.contains("model"), "--eval: '", path,
              "' is not the output of qfx eval --json");
  nlohmann::json row = {{"name", spec.substr(0, eq)}, {"file", eval["model"]}, {"top1", eval["top1"]}};
  for (const char* key : {"top5", "latency_ms_per_image", "items", "batch_size"}) {
    if (eval.contains(key)) row[key] = eval[key];
  }
  std::error_code error;
  auto size = std::filesystem::file_size(eval["model"].get<std::string>(), error);
  if (!error) row["size_bytes"] = size;
  return row;
}

void run(const Options& o) {
  TORCH_CHECK(!o.json.empty() || !o.html.empty(), "qfx report: pass --json FILE and/or --html FILE");
  io::OutputOptions outputs = check_outputs({o.json, o.html}, input_files(o), o.force);
  nlohmann::json report = {{"schema_version", kReportSchemaVersion}, {"title", o.title}};
  if (!o.quantize.empty()) {
    nlohmann::json q = read_json(o.quantize, "--quantize");
    TORCH_CHECK(q.contains("nodes"), "--quantize: '", o.quantize, "' is not the output of qfx quantize --report");
    TORCH_CHECK(q.value("schema_version", 1) == kReportSchemaVersion, "--quantize: '", o.quantize,
                "' is a report of schema version ", q.value("schema_version", 1), "; this qfx reads version ",
                kReportSchemaVersion, " (run qfx quantize --report again)");
    for (const char* key : {"model", "nodes", "timings"}) {
      if (q.contains(key)) report[key] = q[key];
    }
  }
  if (!o.compare.empty()) {
    nlohmann::json c = read_json(o.compare, "--compare");
    TORCH_CHECK(c.contains("layers") && c.contains("output"), "--compare: '", o.compare,
                "' is not the output of qfx compare --json");
    report["compare"] = c;
  }
  for (const std::string& spec : o.evals) report["models"].push_back(model_row(spec));
  io::OutputBatch batch;  // the JSON and the page: both or neither
  outputs.batch = &batch;
  if (!o.json.empty()) io::write_output(o.json, report.dump(1) + "\n", outputs);
  if (!o.html.empty()) io::write_output(o.html, report_html(report), outputs);
  batch.commit();
}

}  // namespace

void add_report_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Combine quantize, compare and eval results into report.json and a self-contained report.html");
  cmd->add_option("--title", o->title, "page title (default: qfx report)");
  cmd->add_option("--quantize", o->quantize, "JSON from qfx quantize --report (nodes, qparams, timings)");
  cmd->add_option("--compare", o->compare, "JSON from qfx compare --json (per-layer SQNR)");
  cmd->add_option("--eval", o->evals, "NAME=FILE: JSON from qfx eval --json, a row of the accuracy table (repeat)");
  cmd->add_option("--json", o->json, "write the combined report as JSON")->check(output_file());
  cmd->add_option("--html", o->html, "write the report as one offline HTML page")->check(output_file());
  add_force_flag(*cmd, o->force);
  cmd->callback([o, &action] { action = [o] { run(*o); }; });
}

}  // namespace qfx::cli
