// qfx side of bench/prepare_convert.sh: prepare_fx (fuse + insert observers)
// and convert_fx (reference, then lowering) on an imported model, one untimed calibration
// forward between them; median of repeats, each on a fresh import.
//
//   bench_prepare_convert MODEL.pt INPUT.pt BACKEND REPEATS

#include "qfx/backend/builtin_backends.h"
#include "qfx/io/tensor_io.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/interpreter.h"
#include "qfx/quantize.h"

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
  qfx::backend::BackendConfig config = qfx::backend::get_backend_config("native");
  qfx::quant::QConfigMapping mapping = qfx::quant::get_default_qconfig_mapping(backend);
  std::vector<double> import_times, prepare_times, convert_times;
  size_t nodes = 0;
  for (int r = 0; r < std::stoi(argv[4]); ++r) {
    auto start = std::chrono::steady_clock::now();
    auto gm = qfx::io::import_torchscript(argv[1]);
    import_times.push_back(seconds_since(start));
    start = std::chrono::steady_clock::now();
    qfx::prepare_fx(*gm, mapping, config);
    prepare_times.push_back(seconds_since(start));
    qfx::ir::Interpreter(*gm).run(inputs);
    start = std::chrono::steady_clock::now();
    qfx::convert_fx(*gm, config);
    convert_times.push_back(seconds_since(start));
    nodes = gm->graph().size();
  }
  nlohmann::json out = {{"import", summary(import_times)},
                        {"prepare", summary(prepare_times)},
                        {"convert", summary(convert_times)},
                        {"nodes", nodes}};
  std::cout << out.dump() << "\n";
  return 0;
}
