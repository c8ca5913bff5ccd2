#pragma once
// The qfx subcommands. Each `add_*` registers one subcommand on the app and,
// when it is the one chosen, sets `action` to the work to do after parsing.

#include <CLI/CLI.hpp>

#include <functional>

namespace qfx::cli {

using Action = std::function<void()>;

/// `qfx print MODEL.pt [--ir | --json]`
void add_print_command(CLI::App& app, Action& action);
/// `qfx run MODEL.pt --input IN.pt [-o OUT.pt]`
void add_run_command(CLI::App& app, Action& action);
/// `qfx qconfig dump BACKEND [--qat]`
void add_qconfig_command(CLI::App& app, Action& action);
/// `qfx observe --observer SPEC.json --input X.pt [--weight]`
void add_observe_command(CLI::App& app, Action& action);
/// `qfx backend-config dump NAME | check FILE.json | docs [-o FILE]`
void add_backend_config_command(CLI::App& app, Action& action);
/// `qfx opt MODEL.pt --passes a,b,... [--print-after-all]`
void add_opt_command(CLI::App& app, Action& action);
/// `qfx quantize MODEL.pt -o OUT.pt [--calib DATA] [--report R.json] ...`
void add_quantize_command(CLI::App& app, Action& action);
/// `qfx sensitivity MODEL.pt --calib DATA --data LABELLED [--metric top1|sqnr]`
void add_sensitivity_command(CLI::App& app, Action& action);
/// `qfx eval MODEL.pt --data DATA [--batch-size B] [--mean M --std S] ...`
void add_eval_command(CLI::App& app, Action& action);
/// `qfx compare FLOAT.pt QUANT.pt --data DATA [--json FILE]`
void add_compare_command(CLI::App& app, Action& action);
/// `qfx report --quantize Q.json --compare C.json --eval NAME=E.json --html report.html`
void add_report_command(CLI::App& app, Action& action);
/// `qfx export MODEL.pt -o OUT.onnx`
void add_export_command(CLI::App& app, Action& action);

}  // namespace qfx::cli
