// qfx side of bench/prepare_convert.sh: prepare_fx (fuse + insert observers)
// and convert_fx (reference, then lowering) on an imported model, one untimed calibration
// forward between them; median of repeats, each on a fresh import. The passes
// run through PassManager as prepare_fx and convert_fx run them, timed one by
// one ("passes": median seconds of each pass, its lint included).
//
//   bench_prepare_convert MODEL.pt INPUT.pt BACKEND REPEATS

#include "pass_seconds.h"

#include "qfx/backend/builtin_backends.h"
#include "qfx/io/tensor_io.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/interpreter.h"
#include "qfx/passes/pass_manager.h"
#include "qfx/quant/qconfig_mapping.h"

#include <ATen/Context.h>
#include <c10/core/InferenceMode.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

nlohmann::json summary(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  return {{"median", times[times.size() / 2]}, {"min", times.front()}, {"max", times.back()}};
}

/// Median seconds of each pass over the repeats (each repeat appends the same passes).
nlohmann::json pass_medians(const std::vector<qfx::passes::PassTime>& times, size_t passes) {
  nlohmann::json out = nlohmann::json::object();
  for (size_t p = 0; p < passes; ++p) {
    std::vector<double> each;
    for (size_t i = p; i < times.size(); i += passes) each.push_back(pass_seconds(times, i, i + 1));
    out[times[p].pass] = summary(each)["median"];
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: bench_prepare_convert MODEL.pt INPUT.pt BACKEND REPEATS\n";
    return 2;
  }
  c10::InferenceMode no_autograd;
  at::globalContext().setQEngine(at::QEngine::ONEDNN);  // as PyTorch's default here
  std::vector<c10::IValue> inputs = qfx::io::as_inputs(qfx::io::load_value(argv[2]), "input");
  std::string backend = argv[3];
  qfx::passes::PassOptions options;
  options.backend_config = std::make_shared<qfx::backend::BackendConfig>(qfx::backend::get_backend_config("native"));
  options.qconfig_mapping =
      std::make_shared<qfx::quant::QConfigMapping>(qfx::quant::get_default_qconfig_mapping(backend));
  std::vector<double> import_times, prepare_times, convert_times;
  std::vector<qfx::passes::PassTime> pass_times;
  size_t nodes = 0;
  for (int r = 0; r < std::stoi(argv[4]); ++r) {
    auto start = std::chrono::steady_clock::now();
    auto gm = qfx::io::import_torchscript(argv[1]);
    import_times.push_back(seconds_since(start));
    size_t first = pass_times.size();
    qfx::passes::PassManager().add("fuse").add("insert-observers").time_passes(pass_times).run(*gm, options);
    prepare_times.push_back(pass_seconds(pass_times, first, first + 2));
    qfx::ir::Interpreter(*gm).run(inputs);
    qfx::passes::PassManager()
        .add("convert-to-reference")
        .add("lower-to-native")
        .time_passes(pass_times)
        .run(*gm, options);
    convert_times.push_back(pass_seconds(pass_times, first + 2, first + 4));
    nodes = gm->graph().size();
  }
  nlohmann::json out = {{"import", summary(import_times)},
                        {"prepare", summary(prepare_times)},
                        {"convert", summary(convert_times)},
                        {"passes", pass_medians(pass_times, 4)},
                        {"nodes", nodes}};
  std::cout << out.dump() << "\n";
  return 0;
}
