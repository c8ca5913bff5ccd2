// Golden IR tests of the passes: each tests/passes/golden/*.ir file states a
// pass pipeline, the modules its graph calls, an input graph in qfx's IR text
// and FileCheck lines (LibTorch's torch/csrc/jit/testing/file_check.h) that
// the graph after the pipeline (and what --explain said) must match.
//
//   # RUN: fuse,insert-observers        passes, in order; `run` feeds the
//                                       graph random INPUT tensors there
//   # QCONFIG: default:onednn           default:ENGINE (default), qat:ENGINE,
//                                       dynamic, none, or a QConfigMapping
//                                       in JSON ({"": "default_qconfig"})
//   # BACKEND: native                   a built-in BackendConfig (default native)
//   # INPUT: 2x3x8x8                     shapes of the graph inputs, one line each
//   # MODULE: conv = Conv2d(3, 8, 3)    a submodule (see make_module)
//   # UNCHANGED                         the graph must come out as it went in
//
// The checked text is the graph's IR text, a line `module TARGET: TYPE` per
// call_module node, then what the passes' --explain said.
//   # CHECK: ... / CHECK-NOT / CHECK-NEXT / CHECK-SAME / CHECK-COUNT-N / CHECK-DAG
//
// Every X.ir has a negative twin X.neg.ir where the pass must not rewrite.

#include "support/fixtures.h"

#include "qfx/backend/builtin_backends.h"
#include "qfx/ir/graph.h"
#include "qfx/ir/graph_module.h"
#include "qfx/ir/interpreter.h"
#include "qfx/ir/module_registry.h"
#include "qfx/ir/parser.h"
#include "qfx/passes/pass_manager.h"
#include "qfx/quant/qconfig_json.h"
#include "qfx/quant/qconfig_mapping.h"

#include <gtest/gtest.h>
#include <ATen/ATen.h>
#include <torch/csrc/jit/testing/file_check.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/modules/rnn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>

namespace qfx {
namespace {

namespace fs = std::filesystem;

fs::path golden_dir() {
  const char* dir = std::getenv("QFX_SOURCE_DIR");
  return fs::path(dir ? dir : "") / "tests" / "passes" / "golden";
}

/// The golden files by stem (`fuse_conv_bn_relu`, `fuse_conv_bn_relu.neg`).
std::vector<std::string> golden_names() {
  std::vector<std::string> names;
  if (std::getenv("QFX_SOURCE_DIR") == nullptr || !fs::is_directory(golden_dir())) return {"without_source_dir"};
  for (const auto& entry : fs::directory_iterator(golden_dir())) {
    if (entry.path().extension() == ".ir") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

using Args = std::vector<int64_t>;
using ModuleMaker = std::function<std::shared_ptr<torch::nn::Module>(const Args&)>;

int64_t at(const Args& a, size_t i) {
  TORCH_CHECK(i < a.size(), "MODULE: missing argument ", i + 1);
  return a[i];
}

/// The module types a golden file may declare, with positional int arguments.
const std::map<std::string, ModuleMaker>& module_makers() {
  static const std::map<std::string, ModuleMaker> kMakers = {
      {"Linear", [](const Args& a) { return torch::nn::Linear(at(a, 0), at(a, 1)).ptr(); }},
      {"Conv1d", [](const Args& a) { return torch::nn::Conv1d(at(a, 0), at(a, 1), at(a, 2)).ptr(); }},
      {"Conv2d", [](const Args& a) { return torch::nn::Conv2d(at(a, 0), at(a, 1), at(a, 2)).ptr(); }},
      {"Conv3d", [](const Args& a) { return torch::nn::Conv3d(at(a, 0), at(a, 1), at(a, 2)).ptr(); }},
      {"ConvTranspose2d", [](const Args& a) { return torch::nn::ConvTranspose2d(at(a, 0), at(a, 1), at(a, 2)).ptr(); }},
      {"BatchNorm1d", [](const Args& a) { return torch::nn::BatchNorm1d(at(a, 0)).ptr(); }},
      {"BatchNorm2d", [](const Args& a) { return torch::nn::BatchNorm2d(at(a, 0)).ptr(); }},
      {"BatchNorm3d", [](const Args& a) { return torch::nn::BatchNorm3d(at(a, 0)).ptr(); }},
      {"LayerNorm", [](const Args& a) { return torch::nn::LayerNorm(std::vector<int64_t>{at(a, 0)}).ptr(); }},
      {"ReLU", [](const Args&) { return torch::nn::ReLU().ptr(); }},
      {"Sigmoid", [](const Args&) { return torch::nn::Sigmoid().ptr(); }},
      {"Tanh", [](const Args&) { return torch::nn::Tanh().ptr(); }},
      {"Dropout", [](const Args&) { return torch::nn::Dropout().ptr(); }},
      {"MaxPool2d", [](const Args& a) { return torch::nn::MaxPool2d(at(a, 0)).ptr(); }},
      {"AdaptiveAvgPool2d", [](const Args& a) { return torch::nn::AdaptiveAvgPool2d(at(a, 0)).ptr(); }},
      {"Embedding", [](const Args& a) { return torch::nn::Embedding(at(a, 0), at(a, 1)).ptr(); }},
      {"LSTM", [](const Args& a) { return torch::nn::LSTM(at(a, 0), at(a, 1)).ptr(); }},
  };
  return kMakers;
}

/// `name = Type(1, 2)` -> the module, added to `gm`.
void add_module(ir::GraphModule& gm, const std::string& spec) {
  static const std::regex kSpec(R"(\s*([\w.]+)\s*=\s*(\w+)\(([^)]*)\)\s*)");
  std::smatch m;
  TORCH_CHECK(std::regex_match(spec, m, kSpec), "MODULE: expected `name = Type(args)`, got '", spec, "'");
  auto maker = module_makers().find(m[2]);
  TORCH_CHECK(maker != module_makers().end(), "MODULE: unknown type ", m[2]);
  Args args;
  std::stringstream in(m[3]);
  for (std::string item; std::getline(in, item, ',');) args.push_back(std::stoll(item));
  gm.add_submodule(m[1], maker->second(args));
}

quant::QConfigMapping mapping_of(const std::string& name) {
  if (name == "none") return quant::QConfigMapping();
  if (name.rfind("{", 0) == 0) return quant::qconfig_mapping_from_json(nlohmann::json::parse(name));
  if (name == "dynamic") return quant::QConfigMapping().set_global(*quant::qconfig_preset("default_dynamic_qconfig"));
  if (name.rfind("qat:", 0) == 0) return quant::get_default_qat_qconfig_mapping(name.substr(4));
  TORCH_CHECK(name.rfind("default:", 0) == 0, "QCONFIG: unknown '", name, "'");
  return quant::get_default_qconfig_mapping(name.substr(8));
}

std::vector<int64_t> shape_of(const std::string& text) {
  std::vector<int64_t> shape;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, 'x');) shape.push_back(std::stoll(item));
  return shape;
}

/// One golden file, read.
struct Golden {
  std::string text;   ///< the whole file: FileCheck reads its CHECK lines
  std::string graph;  ///< the IR lines
  std::vector<std::string> pipeline, modules, inputs;
  std::string qconfig = "default:onednn", backend = "native";
  bool unchanged = false;

  explicit Golden(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream all;
    all << in.rdbuf();
    text = all.str();
    std::stringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("#", 0) != 0) {
        graph += line + "\n";
        continue;
      }
      auto value = [&](const char* key) { return line.substr(std::strlen(key)); };
      if (line.rfind("# RUN: ", 0) == 0) {
        std::stringstream passes(value("# RUN: "));
        for (std::string pass; std::getline(passes, pass, ',');) pipeline.push_back(pass);
      } else if (line.rfind("# QCONFIG: ", 0) == 0) {
        qconfig = value("# QCONFIG: ");
      } else if (line.rfind("# BACKEND: ", 0) == 0) {
        backend = value("# BACKEND: ");
      } else if (line.rfind("# MODULE: ", 0) == 0) {
        modules.push_back(value("# MODULE: "));
      } else if (line.rfind("# INPUT: ", 0) == 0) {
        inputs.push_back(value("# INPUT: "));
      } else if (line == "# UNCHANGED") {
        unchanged = true;
      }
    }
    TORCH_CHECK(!pipeline.empty(), path, ": no `# RUN:` line");
  }

  bool has_checks() const { return text.find("# CHECK") != std::string::npos; }
};

/// `target: type` of each module the graph calls, as `qfx print` names it.
std::string module_types(const ir::GraphModule& gm) {
  std::string out;
  for (const ir::Node* node : gm.graph().nodes()) {
    if (node->op() != ir::Opcode::kCallModule) continue;
    out += "module " + node->target() + ": " + ir::module_type_name(*gm.get_submodule(node->target())) + "\n";
  }
  return out;
}

/// Runs the pipeline; returns the graph's IR text, the types of the modules
/// it calls, then what --explain said.
std::string run_pipeline(const Golden& g, ir::GraphModule& gm) {
  passes::PassOptions options;
  options.backend_config = std::make_shared<backend::BackendConfig>(backend::get_backend_config(g.backend));
  options.qconfig_mapping = std::make_shared<quant::QConfigMapping>(mapping_of(g.qconfig));
  options.is_qat = g.qconfig.rfind("qat:", 0) == 0;
  if (options.is_qat) gm.root().train(true);
  std::ostringstream explain;
  options.explain = &explain;
  for (const std::string& step : g.pipeline) {
    if (step == "run") {
      std::vector<c10::IValue> inputs;
      for (const std::string& shape : g.inputs) inputs.emplace_back(at::randn(shape_of(shape)));
      ir::Interpreter(gm).run(inputs);
      continue;
    }
    passes::PassManager().add(step).run(gm, options);
  }
  return gm.graph().to_string() + "\n" + module_types(gm) + explain.str();
}

class GoldenIR : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenIR, PassOutputMatchesChecks) {
  if (GetParam() == "without_source_dir") GTEST_SKIP() << "QFX_SOURCE_DIR is not set";
  Golden g(golden_dir() / (GetParam() + ".ir"));
  ASSERT_TRUE(g.unchanged || g.has_checks()) << "a golden file needs CHECK lines or # UNCHANGED";
  torch::manual_seed(0);
  auto gm = std::make_unique<ir::GraphModule>(ir::make_container_module(), ir::parse_graph(g.graph));
  for (const std::string& spec : g.modules) add_module(*gm, spec);
  gm->root().train(false);  // QAT pipelines train
  std::string before = gm->graph().to_string();
  std::string after = run_pipeline(g, *gm);
  if (g.unchanged) EXPECT_EQ(gm->graph().to_string(), before) << "the pipeline changed the graph";
  if (g.has_checks()) {
    try {
      torch::jit::testing::FileCheck().run(g.text, after);
    } catch (const std::exception& e) {
      FAIL() << e.what() << "\nin the checked text:\n" << after;
    }
  }
}

/// Each golden test has its negative twin (`X.ir` and `X.neg.ir`).
TEST(GoldenIR, EveryCaseHasItsNegativeTwin) {
  std::vector<std::string> names = golden_names();
  if (names == std::vector<std::string>{"without_source_dir"}) GTEST_SKIP() << "QFX_SOURCE_DIR is not set";
  for (const std::string& name : names) {
    bool negative = name.size() > 4 && name.compare(name.size() - 4, 4, ".neg") == 0;
    std::string twin = negative ? name.substr(0, name.size() - 4) : name + ".neg";
    EXPECT_TRUE(std::find(names.begin(), names.end(), twin) != names.end()) << name << " has no twin " << twin;
  }
}

INSTANTIATE_TEST_SUITE_P(Passes, GoldenIR, ::testing::ValuesIn(golden_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '.', '_');
                           return name;
                         });

}  // namespace
}  // namespace qfx
