// What the exported file's robustness costs (bench/export_host.sh): one
// model quantized once (onednn default mapping, native BackendConfig, the
// calibration batches), then
// - steady-state latency of the export with pointwise convolutions as
//   quantized::linear (qfx's default: runs under any thread count and batch
//   size) against the export with LibTorch's convolution (fails when either
//   changes on CPUs with AVX-512 VNNI), at batch 1 and 8 with 1 and 2
//   threads: each configuration loads both files anew and times them in
//   alternating rounds, so a slow stretch of the host hits both;
// - the time of the run-once check (TorchScriptOptions::check_inputs: load
//   the archive back and run one calibration batch): export with it minus
//   export without it.
//
//   bench_export_host MODEL.pt CALIB.pt EVAL.pt WORK_DIR
// Prints JSON.

#include "qfx/backend/builtin_backends.h"
#include "qfx/io/tensor_io.h"
#include "qfx/io/torchscript_export.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/interpreter.h"
#include "qfx/quantize.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <nlohmann/json.hpp>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <iostream>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Median seconds per run of `a` and of `b`: 3 warm-up runs each, then 9
/// rounds of 10 runs of `a` and 10 of `b` in turn; each round's median.
std::pair<double, double> alternating_latency(const std::function<void()>& a, const std::function<void()>& b) {
  for (int i = 0; i < 3; ++i) a(), b();
  std::vector<double> rounds_a, rounds_b;
  auto round = [](const std::function<void()>& fn) {
    std::vector<double> times;
    for (int i = 0; i < 10; ++i) {
      auto start = Clock::now();
      fn();
      times.push_back(seconds_since(start));
    }
    return median(times);
  };
  for (int r = 0; r < 9; ++r) {
    rounds_a.push_back(round(a));
    rounds_b.push_back(round(b));
  }
  return {median(rounds_a), median(rounds_b)};
}

std::unique_ptr<qfx::ir::GraphModule> quantized(const std::string& model, const std::vector<c10::IValue>& calib) {
  auto gm = qfx::io::import_torchscript(model);
  qfx::prepare_fx(*gm, qfx::quant::get_default_qconfig_mapping("onednn"), qfx::backend::get_native_backend_config());
  qfx::ir::Interpreter interpreter(*gm);
  for (const c10::IValue& batch : calib) interpreter.run({batch});
  qfx::convert_fx(*gm);
  return gm;
}

/// Seconds of export_torchscript with `script`'s options, median of 5.
double export_seconds(const qfx::ir::GraphModule& gm, const std::string& path,
                      const qfx::io::TorchScriptOptions& script) {
  std::vector<double> times;
  for (int i = 0; i < 5; ++i) {
    auto start = Clock::now();
    qfx::io::export_torchscript(gm, path, {}, script);
    times.push_back(seconds_since(start));
  }
  return median(times);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: bench_export_host MODEL.pt CALIB.pt EVAL.pt WORK_DIR\n";
    return 2;
  }
  c10::InferenceMode inference;
  at::globalContext().setQEngine(at::QEngine::ONEDNN);
  std::vector<c10::IValue> calib = qfx::io::load_value(argv[2]).toListRef().vec();
  at::Tensor eval = qfx::io::load_value(argv[3]).toTensor();
  std::string work = argv[4];
  std::unique_ptr<qfx::ir::GraphModule> gm = quantized(argv[1], calib);

  qfx::io::TorchScriptOptions as_linear, as_conv, checked;
  as_conv.pointwise_convs_as_linear = false;
  checked.check_inputs = {calib.front()};
  nlohmann::json out;
  double plain = export_seconds(*gm, work + "/linear.pt", as_linear);
  out["export_s"] = plain;
  out["export_checked_s"] = export_seconds(*gm, work + "/linear.pt", checked);
  out["check_s"] = out["export_checked_s"].get<double>() - plain;
  qfx::io::export_torchscript(*gm, work + "/conv.pt", {}, as_conv);

  const int default_threads = at::get_num_threads();
  for (int threads : {1, 2}) {
    for (int64_t batch : {1, 8}) {
      torch::jit::Module linear = torch::jit::load(work + "/linear.pt");
      torch::jit::Module conv = torch::jit::load(work + "/conv.pt");
      at::set_num_threads(threads);
      at::Tensor x = eval.slice(0, 0, batch).contiguous();
      auto [linear_s, conv_s] = alternating_latency([&] { linear.forward({x}); }, [&] { conv.forward({x}); });
      std::string key = "b" + std::to_string(batch) + "_t" + std::to_string(threads);
      out["latency"][key] = {{"linear_s", linear_s}, {"conv_s", conv_s}, {"ratio", linear_s / conv_s}};
      at::set_num_threads(default_threads);
    }
  }
  std::cout << out.dump() << "\n";
  return 0;
}
