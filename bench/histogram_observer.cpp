// qfx side of bench/histogram_observer.sh: the same protocol as
// histogram_observer.py, on the same input file.
//
//   bench_histogram_observer INPUTS.pt THREADS REPEATS

#include "qfx/io/tensor_io.h"
#include "qfx/quant/histogram_observer.h"

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: bench_histogram_observer INPUTS.pt THREADS REPEATS\n";
    return 2;
  }
  c10::InferenceMode no_autograd;
  c10::IValue file = qfx::io::load_value(argv[1]);
  std::vector<at::Tensor> batches;
  for (const c10::IValue& b : file.toListRef()) batches.push_back(b.toTensor());
  at::set_num_threads(std::stoi(argv[2]));
  int repeats = std::stoi(argv[3]);
  std::vector<double> times;
  qfx::quant::QParams q;
  for (int r = 0; r < repeats; ++r) {
    qfx::quant::HistogramObserver observer;
    auto start = std::chrono::steady_clock::now();
    for (const at::Tensor& b : batches) observer->forward(b);
    q = observer->calculate_qparams();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  nlohmann::json out = {{"median", times[times.size() / 2]},
                        {"min", times.front()},
                        {"max", times.back()},
                        {"scale", q.scale.item<double>()},
                        {"zero_point", q.zero_point.item<int64_t>()}};
  std::cout << out.dump() << "\n";
  return 0;
}
