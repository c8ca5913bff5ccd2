#include "onnx_args.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <sstream>

namespace qfx::cli {

void add_onnx_options(CLI::App& cmd, OnnxArgs& args) {
  cmd.add_option("--format", args.format,
                 "output format: torchscript or onnx (default: by the extension, .onnx is ONNX)");
  cmd.add_option("--opset", args.options.opset, "ONNX: default-domain opset, 13 to 17 (default: 13)")
      ->check(CLI::Range(io::kMinOnnxOpset, io::kMaxOnnxOpset));
  cmd.add_option("--input-shape", args.input_shape,
                 "ONNX: sizes of the model's input for the run that gives shapes, e.g. 1,3,224,224 (default: the "
                 "first batch of the data); dim 0 is exported as a symbolic batch");
  cmd.add_flag_callback(
      "--static-batch", [&args] { args.options.dynamic_batch = false; },
      "ONNX: declare the example's batch size instead of a symbolic batch");
}

bool writes_onnx(const OnnxArgs& args, const std::string& output) {
  TORCH_CHECK(args.format.empty() || args.format == "onnx" || args.format == "torchscript", "--format '", args.format,
              "': expected torchscript or onnx");
  if (!args.format.empty()) return args.format == "onnx";
  return output.size() > 5 && output.compare(output.size() - 5, 5, ".onnx") == 0;
}

namespace {
std::vector<int64_t> parse_shape(const std::string& text) {
  std::vector<int64_t> sizes;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      int64_t v = std::stoll(item, &used);
      TORCH_CHECK(used == item.size() && v > 0 && v <= (int64_t{1} << 20), "");
      sizes.push_back(v);
    } catch (const std::exception&) {
      TORCH_CHECK(false, "--input-shape '", text, "': expected positive sizes separated by commas, e.g. 1,3,224,224");
    }
  }
  TORCH_CHECK(!sizes.empty(), "--input-shape is empty");
  return sizes;
}
}  // namespace

std::vector<c10::IValue> example_inputs(const OnnxArgs& args, const std::string& data, io::DataOptions options) {
  if (!args.input_shape.empty()) return {at::zeros(parse_shape(args.input_shape))};
  TORCH_CHECK(!data.empty(), "ONNX output needs an example input: pass --input-shape (e.g. 1,3,224,224) or data");
  options.max_batches = 1;
  auto batch = io::open_data(data, options)->next();
  TORCH_CHECK(batch.has_value(), "data '", data, "' holds no batches");
  return batch->inputs;
}

}  // namespace qfx::cli
