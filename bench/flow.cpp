// qfx side of bench/run.sh: the whole flow through the C++ API on one model,
// as a deployment would run it: import, prepare_fx, calibration (a list of
// batches), convert_fx, export (median of repeats, each on a fresh import),
// then latency of the exported int8 TorchScript (torch::jit), of the qfx
// interpreter and of the float model at batch 1 and 8 with 1 and 2 threads,
// the int8 output's SQNR against float, sizes and peak memory; and the float
// forward over the calibration batches, the baseline of observer overhead.
//
//   bench_flow MODEL.pt CALIB.pt EVAL.pt OUT_INT8.pt REPEATS [ENGINE]
//   bench_flow --latency ENGINE MODEL.pt INT8.pt EVAL.pt
// REPEATS is the least number of runs; more follow until the median settles.
// ENGINE is onednn (default) or qnnpack: its default qconfig mapping and
// quantized engine. --latency measures the exported int8 file and the float
// model only (bench/run.sh runs it again under OMP_WAIT_POLICY=PASSIVE).
// The process keeps freed memory for reuse as the qfx CLI does (tcmalloc, or
// qfx::reuse_freed_memory under glibc). Prints JSON, with the allocator.

#include "qfx/backend/builtin_backends.h"
#include "qfx/io/tensor_io.h"
#include "qfx/io/torchscript_export.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/interpreter.h"
#include "qfx/quantize.h"
#include "qfx/runtime.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <nlohmann/json.hpp>
#include <torch/script.h>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <filesystem>
#include <functional>
#include <iostream>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

nlohmann::json summary(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  return {{"median", times[times.size() / 2]}, {"min", times.front()}, {"max", times.back()}};
}

/// Seconds per run of `fn` after 3 warm-up runs, in rounds of 10 runs until
/// the last three rounds' medians lie within 5% of each other (at least 3
/// rounds, at most 8), so a slow stretch of the host shows as more rounds
/// rather than as the result. The median and the min-max of the rounds'
/// medians, and the number of rounds (bench/flow.py's latency too).
nlohmann::json latency(const std::function<void()>& fn) {
  for (int i = 0; i < 3; ++i) fn();
  std::vector<double> rounds;
  while (rounds.size() < 8) {
    std::vector<double> times;
    for (int i = 0; i < 10; ++i) {
      auto start = Clock::now();
      fn();
      times.push_back(seconds_since(start));
    }
    rounds.push_back(summary(times)["median"].get<double>());
    if (rounds.size() < 3) continue;
    nlohmann::json last = summary({rounds.end() - 3, rounds.end()});
    if (last["max"].get<double>() - last["min"].get<double>() < 0.05 * last["median"].get<double>()) break;
  }
  nlohmann::json out = summary(rounds);
  out["rounds"] = rounds.size();
  return out;
}

double sqnr_db(const at::Tensor& reference, const at::Tensor& other) {
  at::Tensor x = reference.to(at::kDouble), y = other.to(at::kDouble);
  return 20.0 * std::log10(x.norm().item<double>() / (x - y).norm().item<double>());
}

struct Timings {
  std::vector<double> import, prepare, calibrate, convert, export_;
};

std::unique_ptr<qfx::ir::GraphModule> run_flow(const std::string& model, const std::vector<c10::IValue>& calib,
                                               const std::string& out, const std::string& engine, Timings& t) {
  auto start = Clock::now();
  auto gm = qfx::io::import_torchscript(model);
  t.import.push_back(seconds_since(start));
  start = Clock::now();
  qfx::prepare_fx(*gm, qfx::quant::get_default_qconfig_mapping(engine), qfx::backend::get_native_backend_config());
  t.prepare.push_back(seconds_since(start));
  start = Clock::now();
  qfx::ir::Interpreter interpreter(*gm);
  for (const c10::IValue& batch : calib) interpreter.run({batch});
  t.calibrate.push_back(seconds_since(start));
  start = Clock::now();
  qfx::convert_fx(*gm);
  t.convert.push_back(seconds_since(start));
  start = Clock::now();
  qfx::io::export_torchscript(*gm, out);
  t.export_.push_back(seconds_since(start));
  return gm;
}

/// Makes a converted model of its own, or nothing (`bench_flow --latency`).
using FreshConverted = std::function<std::unique_ptr<qfx::ir::GraphModule>()>;

/// Latency of the exported int8 file, the float model and (if given) the
/// interpreter on a converted model, at batch 1 and 8 with 1 and 2 threads.
/// Each batch size and thread count runs int8 models of its own: LibTorch
/// 1.13's onednn quantized convolution reorders its packed weights in place
/// for the input shape and thread count of its first run and, on CPUs with
/// AVX-512 VNNI, can fail on another ("could not create a primitive
/// descriptor for a reorder primitive"; PyTorch 2.0 reorders through the
/// plain layout instead).
nlohmann::json latencies(const std::string& model, const std::string& int8, const FreshConverted& converted,
                         const at::Tensor& eval) {
  torch::jit::Module float_script = torch::jit::load(model);
  float_script.eval();
  const int default_threads = at::get_num_threads();
  nlohmann::json out;
  for (int threads : {1, 2}) {
    for (int64_t batch : {1, 8}) {
      torch::jit::Module int8_script = torch::jit::load(int8);
      std::unique_ptr<qfx::ir::GraphModule> gm = converted ? converted() : nullptr;
      at::set_num_threads(threads);
      at::Tensor x = eval.slice(0, 0, batch).contiguous();
      std::string key = "b" + std::to_string(batch) + "_t" + std::to_string(threads);
      out["int8_script"][key] = latency([&] { int8_script.forward({x}); });
      if (gm) {
        qfx::ir::Interpreter interpreter(*gm);
        out["int8_interpreter"][key] = latency([&] { interpreter.run({x}); });
      }
      out["float_script"][key] = latency([&] { float_script.forward({x}); });
      at::set_num_threads(default_threads);  // the next models are made as the flow makes them
    }
  }
  at::set_num_threads(2);
  return out;
}

/// Median seconds of the float model's forward over the calibration batches.
nlohmann::json float_forward(const std::string& model, const std::vector<c10::IValue>& calib) {
  auto gm = qfx::io::import_torchscript(model);
  qfx::ir::Interpreter interpreter(*gm);
  for (const c10::IValue& batch : calib) interpreter.run({batch});  // warm-up
  std::vector<double> times;
  for (int r = 0; r < 3; ++r) {
    auto start = Clock::now();
    for (const c10::IValue& batch : calib) interpreter.run({batch});
    times.push_back(seconds_since(start));
  }
  return summary(times);
}

at::QEngine quantized_engine(const std::string& engine) {
  if (engine == "onednn") return at::QEngine::ONEDNN;
  if (engine == "qnnpack") return at::QEngine::QNNPACK;
  throw std::invalid_argument("unknown engine " + engine + " (onednn or qnnpack)");
}

int latency_only(char** argv) {
  at::globalContext().setQEngine(quantized_engine(argv[2]));
  at::Tensor eval = qfx::io::load_value(argv[5]).toTensor();
  std::cout << nlohmann::json{{"latency", latencies(argv[3], argv[4], FreshConverted(), eval)}}.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  c10::InferenceMode no_autograd;
  qfx::reuse_freed_memory();
  if (argc == 6 && std::string(argv[1]) == "--latency") return latency_only(argv);
  if (argc != 6 && argc != 7) {
    std::cerr << "usage: bench_flow MODEL.pt CALIB.pt EVAL.pt OUT_INT8.pt REPEATS [ENGINE]\n"
                 "       bench_flow --latency ENGINE MODEL.pt INT8.pt EVAL.pt\n";
    return 2;
  }
  std::string model = argv[1], out = argv[4], engine = argc == 7 ? argv[6] : "onednn";
  at::globalContext().setQEngine(quantized_engine(engine));
  std::vector<c10::IValue> calib = qfx::io::as_inputs(qfx::io::load_value(argv[2]), "calib");
  at::Tensor eval = qfx::io::load_value(argv[3]).toTensor();
  Timings t;
  std::unique_ptr<qfx::ir::GraphModule> gm;
  // at least REPEATS runs, then until the median of prepare + convert moves by
  // less than 5% from one run to the next (at most 3 x REPEATS)
  const int min_repeats = std::stoi(argv[5]);
  std::vector<double> totals;
  double previous = 0;
  for (int r = 0; r < 3 * min_repeats; ++r) {
    gm = run_flow(model, calib, out, engine, t);
    totals.push_back(t.prepare.back() + t.convert.back());
    double median = summary(totals)["median"].get<double>();
    if (r + 1 >= min_repeats && std::abs(median - previous) < 0.05 * median) break;
    previous = median;
  }

  nlohmann::json result = {{"import", summary(t.import)},       {"prepare", summary(t.prepare)},
                           {"calibrate", summary(t.calibrate)}, {"convert", summary(t.convert)},
                           {"export", summary(t.export_)},      {"nodes", gm->graph().size()},
                           {"repeats", totals.size()}};
  result["float_forward"] = float_forward(model, calib);
  const std::string scratch = out + ".latency.pt";
  result["latency"] = latencies(
      model, out,
      [&] {
        Timings unused;
        return run_flow(model, calib, scratch, engine, unused);
      },
      eval);
  std::filesystem::remove(scratch);
  torch::jit::Module float_script = torch::jit::load(model);
  at::Tensor reference = float_script.forward({eval}).toTensor();
  at::Tensor quantized = torch::jit::load(out).forward({eval}).toTensor();
  result["sqnr_db"] = sqnr_db(reference, quantized.is_quantized() ? quantized.dequantize() : quantized);
  result["size_float"] = std::filesystem::file_size(model);
  result["size_int8"] = std::filesystem::file_size(out);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  result["peak_rss_mb"] = usage.ru_maxrss / 1024.0;
  result["allocator"] = qfx::allocator_name();
  std::cout << result.dump() << "\n";
  return 0;
}
