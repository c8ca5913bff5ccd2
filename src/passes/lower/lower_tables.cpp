// lower-to-native's tables (PyTorch 1.13's _lower_to_native_backend.py).
// Tables, one row per line (not reflowed by clang-format).
// clang-format off

#include "lower_tables.h"

#include "qfx/ir/module_registry.h"
#include "qfx/nn/intrinsic.h"
#include "qfx/pattern/op_catalog.h"

#include <algorithm>

namespace qfx::passes::detail {
namespace {

constexpr const char* kRef = "torch.ao.nn.quantized.reference.";

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

const std::vector<ModuleLowering>& static_module_lowerings() {
  static const std::vector<ModuleLowering> kRows = {
      {"torch.ao.nn.quantized.reference.Linear", "torch.ao.nn.quantized.Linear"},
      {"torch.ao.nn.quantized.reference.Conv1d", "torch.ao.nn.quantized.Conv1d"},
      {"torch.ao.nn.quantized.reference.Conv2d", "torch.ao.nn.quantized.Conv2d"},
      {"torch.ao.nn.quantized.reference.Conv3d", "torch.ao.nn.quantized.Conv3d"},
      {"torch.ao.nn.intrinsic.LinearReLU", "torch.ao.nn.intrinsic.quantized.LinearReLU",
       "torch.ao.nn.quantized.reference.Linear"},
      {"torch.ao.nn.intrinsic.ConvReLU1d", "torch.ao.nn.intrinsic.quantized.ConvReLU1d",
       "torch.ao.nn.quantized.reference.Conv1d"},
      {"torch.ao.nn.intrinsic.ConvReLU2d", "torch.ao.nn.intrinsic.quantized.ConvReLU2d",
       "torch.ao.nn.quantized.reference.Conv2d"},
      {"torch.ao.nn.intrinsic.ConvReLU3d", "torch.ao.nn.intrinsic.quantized.ConvReLU3d",
       "torch.ao.nn.quantized.reference.Conv3d"},
  };
  return kRows;
}

const std::vector<ModuleLowering>& dynamic_module_lowerings() {
  static const std::vector<ModuleLowering> kRows = {
      {"torch.ao.nn.quantized.reference.Linear", "torch.ao.nn.quantized.dynamic.Linear"},
      {"torch.ao.nn.quantized.reference.GRUCell", "torch.ao.nn.quantized.dynamic.GRUCell"},
      {"torch.ao.nn.quantized.reference.LSTMCell", "torch.ao.nn.quantized.dynamic.LSTMCell"},
      {"torch.ao.nn.quantized.reference.RNNCell", "torch.ao.nn.quantized.dynamic.RNNCell"},
      {"torch.ao.nn.quantized.reference.LSTM", "torch.ao.nn.quantized.dynamic.LSTM"},
      {"torch.ao.nn.quantized.reference.GRU", "torch.ao.nn.quantized.dynamic.GRU"},  // PyTorch 2.x's
      {"torch.ao.nn.intrinsic.LinearReLU", "torch.ao.nn.intrinsic.quantized.dynamic.LinearReLU",
       "torch.ao.nn.quantized.reference.Linear"},
  };
  return kRows;
}

const std::vector<ModuleLowering>& weight_only_module_lowerings() {
  static const std::vector<ModuleLowering> kRows = {
      {"torch.ao.nn.quantized.reference.Embedding", "torch.ao.nn.quantized.Embedding"},
      {"torch.ao.nn.quantized.reference.EmbeddingBag", "torch.ao.nn.quantized.EmbeddingBag"},
  };
  return kRows;
}

const std::vector<ModuleLowering>& special_module_lowerings() {
  static const std::vector<ModuleLowering> kRows = {
      {"torch.nn.BatchNorm2d", "torch.ao.nn.quantized.BatchNorm2d"},
      {"torch.nn.BatchNorm3d", "torch.ao.nn.quantized.BatchNorm3d"},
      {"torch.ao.nn.quantized.reference.ConvTranspose1d", "torch.ao.nn.quantized.ConvTranspose1d"},
      {"torch.ao.nn.quantized.reference.ConvTranspose2d", "torch.ao.nn.quantized.ConvTranspose2d"},
      {"torch.nn.ELU", "torch.ao.nn.quantized.ELU"},
      {"torch.nn.LeakyReLU", "torch.ao.nn.quantized.LeakyReLU"},
      {"torch.nn.Hardswish", "torch.ao.nn.quantized.Hardswish"},
      {"torch.nn.InstanceNorm1d", "torch.ao.nn.quantized.InstanceNorm1d"},
      {"torch.nn.InstanceNorm2d", "torch.ao.nn.quantized.InstanceNorm2d"},
      {"torch.nn.InstanceNorm3d", "torch.ao.nn.quantized.InstanceNorm3d"},
      {"torch.nn.LayerNorm", "torch.ao.nn.quantized.LayerNorm"},
      {"torch.nn.Dropout", "torch.ao.nn.quantized.Dropout"},
      {"torch.nn.Softmax", "torch.ao.nn.quantized.Softmax"},
      {"torch.ao.nn.intrinsic.BNReLU2d", "torch.ao.nn.intrinsic.quantized.BNReLU2d"},
      {"torch.ao.nn.intrinsic.BNReLU3d", "torch.ao.nn.intrinsic.quantized.BNReLU3d"},
  };
  return kRows;
}

const ModuleLowering* find_module_lowering(const std::vector<ModuleLowering>& table, const torch::nn::Module& module) {
  std::string type = ir::module_type_name(module);
  for (const ModuleLowering& row : table) {
    if (type != row.source_type) continue;
    if (row.inner_type == nullptr) return &row;
    auto* fused = dynamic_cast<const nn::FusedModuleImpl*>(&module);
    if (fused != nullptr && ir::module_type_name(*fused->module(0)) == row.inner_type) return &row;
  }
  return nullptr;
}

const std::vector<FunctionLowering>& static_function_lowerings() {
  static const std::vector<FunctionLowering> kRows = {
      {"torch.nn.functional.linear", "torch.ops.quantized.linear", "torch.ops.quantized.linear_relu"},
      {"torch.nn.functional.conv1d", "torch.ops.quantized.conv1d", "torch.ops.quantized.conv1d_relu"},
      {"torch.nn.functional.conv2d", "torch.ops.quantized.conv2d", "torch.ops.quantized.conv2d_relu"},
      {"torch.nn.functional.conv3d", "torch.ops.quantized.conv3d", "torch.ops.quantized.conv3d_relu"},
  };
  return kRows;
}

const std::vector<FunctionLowering>& dynamic_function_lowerings() {
  static const std::vector<FunctionLowering> kRows = {
      {"torch.nn.functional.linear", "torch.ops.quantized.linear_dynamic", "torch.ops.quantized.linear_relu_dynamic",
       c10::kQUInt8, c10::kQInt8},
      {"torch.nn.functional.linear", "torch.ops.quantized.linear_dynamic_fp16",
       "torch.ops.quantized.linear_relu_dynamic_fp16", c10::kHalf, c10::kHalf},
      {"torch.nn.functional.conv1d", "torch.ops.quantized.conv1d_dynamic", "", c10::kQUInt8, c10::kQInt8},
      {"torch.nn.functional.conv2d", "torch.ops.quantized.conv2d_dynamic", "", c10::kQUInt8, c10::kQInt8},
      {"torch.nn.functional.conv3d", "torch.ops.quantized.conv3d_dynamic", "", c10::kQUInt8, c10::kQInt8},
  };
  return kRows;
}

const std::vector<FunctionLowering>& binary_op_lowerings() {
  static const std::vector<FunctionLowering> kRows = {
      {"operator.add", "torch.ops.quantized.add", "torch.ops.quantized.add_relu"},
      {"torch.add", "torch.ops.quantized.add", "torch.ops.quantized.add_relu"},
      {"operator.mul", "torch.ops.quantized.mul", "torch.ops.quantized.mul_relu"},
      {"torch.mul", "torch.ops.quantized.mul", "torch.ops.quantized.mul_relu"},
      {"torch.matmul", "torch.ops.quantized.matmul", ""},
  };
  return kRows;
}

const std::vector<DefaultFunctionLowering>& default_function_lowerings() {
  static const std::vector<DefaultFunctionLowering> kRows = {
      {"torch.nn.functional.elu", "torch.ops.quantized.elu", {{"alpha", 1.0}, {"inplace", false}}, {"inplace"}},
      {"torch.nn.functional.hardswish", "torch.ops.quantized.hardswish", {{"inplace", false}}, {"inplace"}},
      {"torch.nn.functional.instance_norm", "torch.ops.quantized.instance_norm",
       {{"running_mean", {}}, {"running_var", {}}, {"weight", {}}, {"bias", {}}, {"use_input_stats", true},
        {"momentum", 0.1}, {"eps", 1e-5}},
       {"running_mean", "running_var", "use_input_stats", "momentum"}},
      {"torch.nn.functional.layer_norm", "torch.ops.quantized.layer_norm",
       {{"normalized_shape", {}, true}, {"weight", {}}, {"bias", {}}, {"eps", 1e-5}}, {}},
      {"torch.nn.functional.leaky_relu", "torch.ops.quantized.leaky_relu",
       {{"negative_slope", 0.01}, {"inplace", false}}, {}},
      {"torch.nn.functional.dropout", "torch.ops.quantized.dropout",
       {{"p", 0.5}, {"training", true}, {"inplace", false}}, {"inplace"}},
  };
  return kRows;
}

std::string prepack_op(const std::string& function, c10::ScalarType weight_dtype) {
  if (function == "torch.nn.functional.linear") {
    return weight_dtype == c10::kHalf ? "torch.ops.quantized.linear_prepack_fp16" : "torch.ops.quantized.linear_prepack";
  }
  for (const char* d : {"1d", "2d", "3d"}) {
    if (function == std::string("torch.nn.functional.conv") + d) return std::string("torch.ops.quantized.conv") + d + "_prepack";
  }
  TORCH_CHECK(false, "lowering is not supported for op '", function, "'");
}

std::string function_name(const ir::Node& node) { return pattern::canonical_op_name(node.target()); }

const FunctionLowering* find_function_lowering(const std::vector<FunctionLowering>& table, const ir::Node& node) {
  if (node.op() != ir::Opcode::kCallFunction) return nullptr;
  std::string name = function_name(node);
  for (const FunctionLowering& row : table) {
    if (name == row.function) return &row;
  }
  return nullptr;
}

ListHit find_in(const NodeList& list, const ir::Node& node, const ir::GraphModule& gm) {
  ListHit hit;
  if (node.op() == ir::Opcode::kCallFunction) hit.function = contains(list.functions, function_name(node));
  if (node.op() == ir::Opcode::kCallMethod) hit.method = contains(list.methods, node.target());
  if (node.op() == ir::Opcode::kCallModule) {
    hit.module = contains(list.modules, ir::module_type_name(*gm.get_submodule(node.target())));
  }
  return hit;
}

const NodeList& fixed_qparams_nodes() {
  static const NodeList kList = {
      {"torch.nn.functional.hardsigmoid", "torch.nn.functional.sigmoid", "torch.sigmoid", "torch.tanh"},
      {"hardsigmoid", "hardsigmoid_", "sigmoid", "sigmoid_", "tanh", "tanh_"},
      {"torch.nn.Hardsigmoid", "torch.nn.Sigmoid", "torch.nn.Tanh", "torch.nn.Softmax"}};
  return kList;
}

// PyTorch 1.13 also lists torch.nn.PReLU and swaps it for a quantized PReLU
// whose weight comes from an observer that never saw it (slopes of 0.25
// become 0), on a kernel that scales positive inputs too; qfx keeps PReLU
// float between its dequantize and quantize (docs/divergences.md).
const NodeList& default_nodes() {
  static const NodeList kList = {
      {"torch.nn.functional.elu", "torch.nn.functional.hardswish", "torch.nn.functional.instance_norm",
       "torch.nn.functional.layer_norm", "torch.nn.functional.leaky_relu", "torch.nn.functional.dropout"},
      {},
      {std::string(kRef) + "ConvTranspose1d", std::string(kRef) + "ConvTranspose2d", "torch.nn.ELU",
       "torch.nn.LeakyReLU", "torch.nn.Hardswish", "torch.nn.InstanceNorm1d", "torch.nn.InstanceNorm2d",
       "torch.nn.InstanceNorm3d", "torch.nn.LayerNorm", "torch.nn.Dropout", "torch.nn.BatchNorm2d",
       "torch.nn.BatchNorm3d", "torch.ao.nn.intrinsic.BNReLU2d", "torch.ao.nn.intrinsic.BNReLU3d"}};
  return kList;
}

namespace {

// 1.13's list without max_pool3d / MaxPool3d: LibTorch has no quantized
// max_pool3d kernel, so they stay float between dequantize and quantize
// (the same values: max commutes with the monotonic dequantization;
// docs/divergences.md).
const NodeList& copy_nodes() {
  static const NodeList kList = {
      {"torch.nn.functional.adaptive_avg_pool1d", "torch.nn.functional.adaptive_avg_pool2d",
       "torch.nn.functional.adaptive_avg_pool3d", "torch.nn.functional.hardtanh", "torch.nn.functional.hardtanh_",
       "torch.nn.functional.interpolate", "torch.nn.functional.max_pool1d", "torch.nn.functional.max_pool2d",
       "torch.nn.functional.relu", "torch.nn.functional.relu6",
       "torch.nn.functional.avg_pool1d", "torch.nn.functional.avg_pool2d", "torch.nn.functional.avg_pool3d",
       "torch.clamp", "torch.flatten", "torch.mean", "operator.floordiv"},
      {"clamp", "mean", "relu", "relu_"},
      {"torch.nn.AdaptiveAvgPool1d", "torch.nn.AdaptiveAvgPool2d", "torch.nn.AdaptiveAvgPool3d", "torch.nn.AvgPool1d",
       "torch.nn.AvgPool2d", "torch.nn.AvgPool3d", "torch.nn.Hardtanh", "torch.nn.MaxPool1d", "torch.nn.MaxPool2d",
       "torch.nn.ReLU", "torch.nn.ReLU6"}};
  return kList;
}

const NodeList& general_tensor_shape_nodes() {
  static const NodeList kList = {
      {"torch.transpose", "torch.repeat_interleave", "torch.squeeze", "torch.stack", "torch.unsqueeze"},
      {"contiguous", "detach", "detach_", "permute", "repeat", "repeat_interleave", "reshape", "resize_", "shape",
       "size", "squeeze", "squeeze_", "transpose", "unsqueeze", "unsqueeze_", "view"},
      {"torch.nn.Identity"}};
  return kList;
}

const NodeList& other_nodes() {
  static const NodeList kList = {{"torch.cat"}, {}, {}};
  return kList;
}

}  // namespace

ListHit find_special_pattern(const ir::Node& node, const ir::GraphModule& gm) {
  ListHit all;
  for (const NodeList* list :
       {&fixed_qparams_nodes(), &default_nodes(), &copy_nodes(), &general_tensor_shape_nodes(), &other_nodes()}) {
    ListHit hit = find_in(*list, node, gm);
    all.function |= hit.function;
    all.method |= hit.method;
    all.module |= hit.module;
  }
  return all;
}

}  // namespace qfx::passes::detail
