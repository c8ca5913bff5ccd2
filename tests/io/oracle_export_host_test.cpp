// An exported onednn model on a host that changes its thread count and
// batch size between calls. LibTorch 1.13's onednn convolution fails on
// such a host when its weight layout depends on the shape or thread count
// of the first call ("could not create a primitive descriptor for a
// reorder primitive": the pointwise convolutions of mobilenet_v2 on CPUs
// with AVX-512 VNNI); the file qfx exports must keep running with each
// sample's output the same bit for bit. The files are also kept for
// tests/oracle/check_exported.py, which runs the same sequence in Python.

#include "support/fixtures.h"

#include "qfx/backend/builtin_backends.h"
#include "qfx/io/tensor_io.h"
#include "qfx/io/torchscript_export.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/interpreter.h"
#include "qfx/quant/qconfig_json.h"
#include "qfx/quantize.h"

#include <gtest/gtest.h>
#include <ATen/Parallel.h>
#include <torch/script.h>

#include <fstream>
#include <iostream>

namespace qfx {
namespace {

/// The (threads, batch) sequence every exported model must survive.
const std::vector<std::pair<int, int64_t>> kHostSequence = {{1, 1}, {1, 8}, {2, 1}, {2, 8}, {1, 1},
                                                            {2, 1}, {1, 8}, {2, 8}, {1, 1}};

/// The CPU features that decide the onednn kernels (and so whether the
/// failure can happen here at all), from /proc/cpuinfo.
std::string cpu_features() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, found;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    for (const char* flag : {"avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_int8"}) {
      if (line.find(std::string(" ") + flag) != std::string::npos)
        found += std::string(found.empty() ? "" : " ") + flag;
    }
    break;
  }
  return found.empty() ? "none of avx2/avx512" : found;
}

class ThreadsGuard {
 public:
  ThreadsGuard() : previous_(at::get_num_threads()) {}
  ~ThreadsGuard() { at::set_num_threads(previous_); }

 private:
  int previous_;
};

/// Eight samples from the fixture's input: the input, flipped and scaled.
at::Tensor eight_samples(const at::Tensor& input) {
  std::vector<at::Tensor> parts;
  for (int64_t i = 0; static_cast<int64_t>(parts.size()) * input.size(0) < 8; ++i) {
    at::Tensor part = i % 2 == 0 ? input : input.flip(-1);
    parts.push_back(part * (1.0 + 0.1 * static_cast<double>(i)));
  }
  return at::cat(parts).slice(0, 0, 8).contiguous();
}

class OracleExportHost : public ::testing::TestWithParam<std::string> {};

TEST_P(OracleExportHost, SurvivesThreadAndBatchChanges) {
  torch::NoGradGuard no_grad;
  test::EngineGuard engine("onednn");
  ThreadsGuard restore;
  nlohmann::json record = test::fixture_case("prepare.json", GetParam());
  auto gm = io::import_torchscript(test::fixture(record["model"]));
  prepare_fx(*gm, quant::qconfig_mapping_from_json(record["qconfig_mapping"]), backend::get_native_backend_config());
  at::Tensor samples = eight_samples(io::load_value(test::fixture(record["input"])).toTensor());
  ir::Interpreter(*gm).run({samples});
  convert_fx(*gm, backend::get_native_backend_config());
  std::string path = ::testing::TempDir() + "qfx_export_host_" + GetParam() + ".pt";
  io::export_torchscript(*gm, path);
  std::cout << "CPU features: " << cpu_features() << "\n";

  torch::jit::Module module = torch::jit::load(path);
  std::vector<at::Tensor> first(8);  // each sample's output the first time it ran
  for (const auto& [threads, batch] : kHostSequence) {
    at::set_num_threads(threads);
    at::Tensor out;
    ASSERT_NO_THROW(out = module.forward({samples.slice(0, 0, batch)}).toTensor())
        << "threads " << threads << ", batch " << batch;
    for (int64_t i = 0; i < batch; ++i) {
      if (!first[i].defined()) first[i] = out[i].clone();
      EXPECT_TRUE(at::equal(out[i], first[i])) << "sample " << i << " at threads " << threads << ", batch " << batch;
    }
  }
  at::Tensor all = at::stack(first);
  test::keep_for_python("host_sequence_" + GetParam(), path, {samples}, all, 0.0, false, "onednn",
                        /*host_sequence=*/true);
}

INSTANTIATE_TEST_SUITE_P(Models, OracleExportHost, ::testing::Values("mobilenet_v2", "resnet18"));

}  // namespace
}  // namespace qfx
