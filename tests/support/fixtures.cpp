#include "fixtures.h"

#include "qfx/io/onnx_export.h"
#include "qfx/ir/kernel_workarounds.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>
#include <fstream>

namespace qfx::test {

std::string fixture(const std::string& name) {
  const char* dir = std::getenv("QFX_FIXTURES");
  TORCH_CHECK(dir != nullptr, "QFX_FIXTURES is not set; run the tests through ctest");
  return std::string(dir) + "/" + name;
}

std::string source_file(const std::string& path) {
  const char* dir = std::getenv("QFX_SOURCE_DIR");
  TORCH_CHECK(dir != nullptr, "QFX_SOURCE_DIR is not set; run the tests through ctest");
  return std::string(dir) + "/" + path;
}

nlohmann::json fixture_json(const std::string& name) {
  std::ifstream in(fixture(name));
  TORCH_CHECK(in.good(), "missing fixture ", name);
  return nlohmann::json::parse(in);
}

namespace {

at::Tensor as_double(const at::Tensor& t) { return (t.is_quantized() ? t.dequantize() : t).to(at::kDouble); }

double max_error(const c10::IValue& a, const c10::IValue& b, bool relative) {
  if (a.isTensor()) {
    TORCH_CHECK(b.isTensor(), "structure mismatch: tensor vs ", b.tagKind());
    at::Tensor x = as_double(a.toTensor());
    at::Tensor y = as_double(b.toTensor());
    TORCH_CHECK(x.sizes() == y.sizes(), "shape mismatch: ", x.sizes(), " vs ", y.sizes());
    double scale = relative ? std::max(1e-12, y.abs().max().item<double>()) : 1.0;
    return (x - y).abs().max().item<double>() / scale;
  }
  auto items = [](const c10::IValue& v) {
    TORCH_CHECK(v.isTuple() || v.isList(), "expected a tensor, list or tuple, got ", v.tagKind());
    return v.isTuple() ? v.toTupleRef().elements().vec() : v.toListRef().vec();
  };
  auto xs = items(a);
  auto ys = items(b);
  TORCH_CHECK(xs.size() == ys.size(), "length mismatch: ", xs.size(), " vs ", ys.size());
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) worst = std::max(worst, max_error(xs[i], ys[i], relative));
  return worst;
}

}  // namespace

double max_relative_error(const c10::IValue& a, const c10::IValue& b) { return max_error(a, b, true); }

double max_abs_error(const c10::IValue& a, const c10::IValue& b) { return max_error(a, b, false); }

namespace {
/// The tensors of a value, depth first (a trace returns nested tuples flat).
void flatten(const c10::IValue& v, std::vector<at::Tensor>& out) {
  if (v.isTensor()) return out.push_back(v.toTensor());
  for (const c10::IValue& item : v.isTuple() ? v.toTupleRef().elements().vec() : v.toListRef().vec())
    flatten(item, out);
}
}  // namespace

double sqnr_db(const c10::IValue& ours, const c10::IValue& expected) {
  std::vector<at::Tensor> a, b;
  flatten(ours, a);
  flatten(expected, b);
  TORCH_CHECK(a.size() == b.size(), "sqnr_db: ", a.size(), " outputs vs ", b.size());
  double worst = INFINITY;
  for (size_t i = 0; i < a.size(); ++i) {
    at::Tensor f = as_double(b[i]);
    at::Tensor q = as_double(a[i]);
    double noise = (f - q).pow(2).sum().item<double>();
    worst = std::min(worst, noise == 0 ? INFINITY : 10 * std::log10(f.pow(2).sum().item<double>() / noise));
  }
  return worst;
}

bool shares_storage(const torch::nn::Module& a, const torch::nn::Module& b) {
  std::set<const void*> storages;
  for (const at::Tensor& t : a.parameters()) storages.insert(t.storage().data());
  for (const at::Tensor& t : a.buffers()) storages.insert(t.storage().data());
  storages.erase(nullptr);
  auto shared = [&](const at::Tensor& t) { return storages.count(t.storage().data()) != 0; };
  auto params = b.parameters();
  auto buffers = b.buffers();
  return std::any_of(params.begin(), params.end(), shared) || std::any_of(buffers.begin(), buffers.end(), shared);
}

}  // namespace qfx::test

#include "qfx/ir/graph_module.h"

#include <ATen/Context.h>
#include <c10/util/Exception.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

namespace qfx::test {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "";
}

std::unique_ptr<ir::GraphModule> conv_bn_linear() {
  auto gm = std::make_unique<ir::GraphModule>();
  gm->add_submodule("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(2, 3, 3).padding(1)).ptr());
  gm->add_submodule("bn", torch::nn::BatchNorm2d(3).ptr());
  gm->add_submodule("fc", torch::nn::Linear(3 * 4 * 4, 5).ptr());
  ir::Graph& g = gm->graph();
  ir::Node* x = g.call_module("bn", {g.call_module("conv", {g.placeholder("x")})});
  x = g.call_function("torch.relu", {x});
  g.output(g.call_module("fc", {g.call_function("torch.flatten", {x, int64_t{1}})}));
  gm->root().eval();
  return gm;
}

double from_hex(const std::string& text) { return std::strtod(text.c_str(), nullptr); }

EngineGuard::EngineGuard(const std::string& name) : previous_(static_cast<int>(at::globalContext().qEngine())) {
  at::globalContext().setQEngine(name == "qnnpack" ? at::QEngine::QNNPACK : at::QEngine::ONEDNN);
}

EngineGuard::~EngineGuard() { at::globalContext().setQEngine(static_cast<at::QEngine>(previous_)); }

KernelWorkaroundsOff::KernelWorkaroundsOff() { ir::set_kernel_workarounds(false); }
KernelWorkaroundsOff::~KernelWorkaroundsOff() { ir::set_kernel_workarounds(true); }

struct WarningCapture::Handler : public c10::WarningHandler {
  void process(const c10::SourceLocation&, const std::string& msg, const bool) override { messages.push_back(msg); }
  std::vector<std::string> messages;
  c10::WarningHandler* previous = nullptr;
};

WarningCapture::WarningCapture() : handler_(std::make_unique<Handler>()) {
  handler_->previous = c10::Warning::get_warning_handler();
  c10::Warning::set_warning_handler(handler_.get());
}

WarningCapture::~WarningCapture() { c10::Warning::set_warning_handler(handler_->previous); }

const std::vector<std::string>& WarningCapture::messages() const { return handler_->messages; }

nlohmann::json fixture_case(const std::string& file, const std::string& name) {
  for (const nlohmann::json& record : fixture_json(file)) {
    if (record["case"] == name) return record;
  }
  TORCH_CHECK(false, "no case ", name, " in ", file);
}

std::string first_difference(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    std::string x = i < a.size() ? a[i] : "(end)", y = i < b.size() ? b[i] : "(end)";
    if (x != y) return "at " + std::to_string(i) + ": " + x + " vs " + y;
  }
  return "";
}

}  // namespace qfx::test

#include "qfx/io/tensor_io.h"

#include <filesystem>

namespace qfx::test {

void keep_for_python(const std::string& name, const std::string& exported, const std::vector<c10::IValue>& inputs,
                     const c10::IValue& output, double tolerance, bool relative, const std::string& engine,
                     bool host_sequence) {
  const char* dir = std::getenv("QFX_EXPORT_DIR");
  if (dir == nullptr) return;
  std::filesystem::create_directories(dir);
  std::string base = std::string(dir) + "/" + name;
  std::filesystem::copy_file(exported, base + ".pt", std::filesystem::copy_options::overwrite_existing);
  io::save_value(c10::ivalue::Tuple::create(inputs), base + "_inputs.pt");
  io::save_value(output, base + "_output.pt");
  nlohmann::json record = {{"model", name + ".pt"},         {"inputs", name + "_inputs.pt"},
                           {"output", name + "_output.pt"}, {"tolerance", tolerance},
                           {"relative", relative},          {"engine", engine},
                           {"host_sequence", host_sequence}};
  std::ofstream(base + ".json") << record.dump(1) << "\n";
}

namespace {
/// The tensors of `value` (a tensor, or nested tuples and lists of them), dequantized.
void flat_tensors(const c10::IValue& value, std::vector<at::Tensor>& out) {
  if (value.isTensor()) {
    const at::Tensor& t = value.toTensor();
    out.push_back(t.is_quantized() ? t.dequantize() : t);
  } else if (value.isTuple()) {
    for (const auto& item : value.toTupleRef().elements()) flat_tensors(item, out);
  } else if (value.isList()) {
    for (const auto& item : value.toListRef()) flat_tensors(item, out);
  }
}

/// Writes the tensors of `value` as one raw file of `dtype` (float32 or int64).
void write_raw(const c10::IValue& value, const std::string& path) {
  std::vector<at::Tensor> tensors;
  flat_tensors(value, tensors);
  std::ofstream out(path, std::ios::binary);
  for (const at::Tensor& t : tensors) {
    at::Tensor c = t.is_floating_point() ? t.to(at::kFloat).contiguous() : t.to(at::kLong).contiguous();
    out.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.numel() * c.element_size()));
  }
}
}  // namespace

void keep_for_onnx(const std::string& name, const ir::GraphModule& reference_model,
                   const std::vector<c10::IValue>& inputs, const c10::IValue& reference, const c10::IValue& lowered,
                   double step, const std::vector<c10::IValue>* example, const io::OnnxExportOptions& options) {
  const char* dir = std::getenv("QFX_EXPORT_DIR");
  if (dir == nullptr) return;
  std::string base = std::string(dir) + "/onnx/" + name;
  std::filesystem::create_directories(std::string(dir) + "/onnx");
  nlohmann::json record = {{"name", name}, {"step", step}};
  try {
    std::string bytes = io::onnx_model_bytes(reference_model, example != nullptr ? *example : inputs, options);
    std::ofstream(base + ".onnx", std::ios::binary) << bytes;
    record["model"] = name + ".onnx";
  } catch (const c10::Error& e) {
    record["error"] = e.what_without_backtrace();
  }
  nlohmann::json specs = nlohmann::json::array();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].isTensor()) {
      record["error"] = "input " + std::to_string(i) + " is not a tensor";
      break;
    }
    const at::Tensor& t = inputs[i].toTensor();
    std::string file = name + "_input" + std::to_string(i) + ".bin";
    write_raw(t, std::string(dir) + "/onnx/" + file);
    specs.push_back(
        {{"file", file}, {"shape", t.sizes().vec()}, {"dtype", t.is_floating_point() ? "float32" : "int64"}});
  }
  record["inputs"] = specs;
  write_raw(reference, base + "_reference.bin");
  write_raw(lowered, base + "_lowered.bin");
  record["reference"] = name + "_reference.bin";
  record["lowered"] = name + "_lowered.bin";
  std::ofstream(base + ".json") << record.dump(1) << "\n";
}

}  // namespace qfx::test
