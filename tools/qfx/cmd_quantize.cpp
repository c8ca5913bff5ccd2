// `qfx quantize MODEL.pt -o OUT.pt`: import, prepare_fx, calibrate on a
// tensor file, convert_fx (or convert_to_reference_fx), export TorchScript,
// and optionally a per-node JSON report with the time of each stage.

#include "commands.h"
#include "config_args.h"

#include "qfx/custom_config_json.h"
#include "qfx/io/tensor_io.h"
#include "qfx/io/torchscript_export.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/interpreter.h"
#include "qfx/quant/qconfig.h"
#include "qfx/quantize.h"
#include "qfx/quantize_report.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <c10/core/InferenceMode.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <iostream>

namespace qfx::cli {
namespace {

struct Options {
  std::string model, output, backend = "native", qconfig = "default", engine = "onednn", calib, report;
  std::string prepare_custom_config;
  int64_t calib_batches = 0;  // 0: all
  int64_t batch_size = 8;
  bool dynamic = false, reference = false, print = false;
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

/// The batches a calibration file holds: one tensor split along dim 0, or a
/// list whose items are batches (a tensor, or a tuple of tensors).
std::vector<std::vector<c10::IValue>> calibration_batches(const Options& o) {
  c10::IValue data = io::load_value(o.calib);
  std::vector<std::vector<c10::IValue>> batches;
  if (data.isTensor()) {
    TORCH_CHECK(data.toTensor().dim() > 0, "calibration data '", o.calib, "': a 0-dim tensor has no batches");
    for (const at::Tensor& b : data.toTensor().split(o.batch_size)) batches.push_back({b});
  } else {
    TORCH_CHECK(data.isList() || data.isTuple(), "calibration data '", o.calib,
                "' must be a tensor or a list of batches, got ", data.tagKind());
    auto items = data.isList() ? data.toListRef().vec() : data.toTupleRef().elements().vec();
    for (size_t i = 0; i < items.size(); ++i) {
      batches.push_back(io::as_inputs(items[i], "calibration data '" + o.calib + "' item " + std::to_string(i)));
    }
  }
  if (o.calib_batches > 0 && batches.size() > static_cast<size_t>(o.calib_batches)) batches.resize(o.calib_batches);
  TORCH_CHECK(!batches.empty(), "calibration data '", o.calib, "' holds no batches");
  return batches;
}

void check_finite(const std::vector<c10::IValue>& batch, const Options& o, size_t index) {
  for (const c10::IValue& v : batch) {
    if (!v.isTensor() || !v.toTensor().is_floating_point()) continue;
    TORCH_CHECK(at::isfinite(v.toTensor()).all().item<bool>(), "calibration data '", o.calib, "' batch ", index,
                " holds NaN or infinite values");
  }
}

void calibrate(ir::GraphModule& gm, const Options& o) {
  std::vector<std::vector<c10::IValue>> batches = calibration_batches(o);
  ir::Interpreter interpreter(gm);
  for (size_t i = 0; i < batches.size(); ++i) {
    check_finite(batches[i], o, i);
    try {
      interpreter.run(batches[i]);
    } catch (const c10::Error& e) {
      TORCH_CHECK(false, "calibration data '", o.calib, "' batch ", i, ": ", e.what_without_backtrace());
    }
  }
}

quant::QConfigMapping mapping_for(const Options& o) {
  if (o.dynamic) {
    // Linear layers, and the relus a fused LinearReLU needs to share their qconfig
    quant::QConfigAny dynamic = *quant::qconfig_preset("default_dynamic_qconfig");
    quant::QConfigMapping mapping;
    for (const char* type : {"torch.nn.Linear", "torch.nn.functional.linear", "torch.nn.ReLU", "torch.nn.functional.relu"}) {
      mapping.set_object_type(type, dynamic);
    }
    return mapping;
  }
  if (o.qconfig == "qat") return qconfig_mapping_from_arg("qat:" + o.engine);
  if (o.qconfig == "default") return qconfig_mapping_from_arg("default:" + o.engine);
  return qconfig_mapping_from_arg(o.qconfig);
}

/// `--qconfig qat` / `qat:ENGINE`: prepare_qat_fx, so fake quantization and
/// folded batch norms run through calibration (with batch-norm statistics
/// frozen: the model calibrates in eval mode).
bool is_qat(const Options& o) { return o.qconfig == "qat" || o.qconfig.rfind("qat:", 0) == 0; }

void prepare(ir::GraphModule& gm, const quant::QConfigMapping& mapping, const backend::BackendConfig& backend,
             const PrepareCustomConfig& custom, const Options& o) {
  if (!is_qat(o)) return prepare_fx(gm, mapping, backend, custom);
  prepare_qat_fx(gm, mapping, backend, custom);
  gm.root().train(false);
}

void run(const Options& o) {
  c10::InferenceMode no_autograd;
  TORCH_CHECK(o.engine == "onednn" || o.engine == "qnnpack", "--engine must be onednn or qnnpack, got '", o.engine,
              "'");
  at::globalContext().setQEngine(o.engine == "qnnpack" ? at::QEngine::QNNPACK : at::QEngine::ONEDNN);
  TORCH_CHECK(o.dynamic || !o.calib.empty(), "static quantization needs calibration data: pass --calib DATA "
              "(or --dynamic)");
  TORCH_CHECK(o.batch_size > 0, "--batch-size must be positive, got ", o.batch_size);
  backend::BackendConfig backend = backend_from_arg(o.backend);
  quant::QConfigMapping mapping = mapping_for(o);
  PrepareCustomConfig custom;
  if (!o.prepare_custom_config.empty()) custom = load_prepare_custom_config(o.prepare_custom_config);

  Stopwatch clock;
  nlohmann::json timings;
  auto gm = io::import_torchscript(o.model, import_options(custom));
  std::vector<ReportNode> float_nodes = report_nodes_of(*gm);
  timings["import_s"] = clock.lap();
  prepare(*gm, mapping, backend, custom, o);
  timings["prepare_s"] = clock.lap();
  if (!o.calib.empty()) calibrate(*gm, o);
  timings["calibrate_s"] = clock.lap();
  nlohmann::json nodes = quantization_report(*gm, float_nodes);
  clock.lap();
  ConvertCustomConfig convert_custom;
  convert_custom.preserved_attributes = custom.preserved_attributes;  // kept into the output file
  if (o.reference) {
    convert_to_reference_fx(*gm, backend, custom, convert_custom);
  } else {
    convert_fx(*gm, backend, custom, convert_custom);
  }
  timings["convert_s"] = clock.lap();
  io::export_torchscript(*gm, o.output);
  timings["export_s"] = clock.lap();
  if (o.print) std::cout << gm->to_string() << "\n";
  if (!o.report.empty()) {
    nlohmann::json report = {{"nodes", nodes}, {"timings", timings}};
    io::write_file_atomically(o.report, report.dump(1) + "\n");
  }
}

}  // namespace

void add_quantize_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("quantize", "Quantize a TorchScript model: prepare, calibrate, convert, export");
  cmd->add_option("model", o->model, "TorchScript model file (.pt)")->required();
  cmd->add_option("-o,--output", o->output, "the quantized TorchScript model to write")->required();
  cmd->add_option("--backend", o->backend, "built-in BackendConfig name or JSON file (default: native)");
  cmd->add_option("--qconfig", o->qconfig,
                  "default (the engine's default QConfigMapping), default:ENGINE, qat (prepare_qat_fx with the "
                  "engine's QAT mapping), qat:ENGINE or a QConfigMapping JSON file");
  cmd->add_option("--engine", o->engine, "quantized engine the weights are packed for: onednn or qnnpack");
  cmd->add_option("--calib", o->calib,
                  "calibration data saved with torch.save: a tensor (batches along dim 0) or a list of batches");
  cmd->add_option("--calib-batches", o->calib_batches, "use at most this many batches (default: all)");
  cmd->add_option("--batch-size", o->batch_size, "batch size when --calib is one tensor (default: 8)");
  cmd->add_option("--prepare-custom-config", o->prepare_custom_config,
                  "PrepareCustomConfig JSON (PyTorch's to_dict() keys): standalone and non-traceable modules, "
                  "input/output_quantized_idxs, preserved_attributes (kept in the output file)");
  cmd->add_flag("--dynamic", o->dynamic, "dynamic quantization of Linear layers (no calibration)");
  cmd->add_flag("--reference", o->reference, "write the reference model (quantize/dequantize + float ops)");
  cmd->add_option("--report", o->report, "write a per-node JSON report with stage timings");
  cmd->add_flag("--print", o->print, "print the converted model");
  cmd->callback([o, &action] { action = [o] { run(*o); }; });
}

}  // namespace qfx::cli
