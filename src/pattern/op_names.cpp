// The names of PyTorch ops that quantization configs refer to, as data: module
// types by family (float, fused, QAT, reference, quantized, dynamic), the
// functions of the built-in backends, and the aliases PyTorch has for them.
// Tables, one row per line (not reflowed by clang-format).
// clang-format off

#include "op_names.h"

namespace qfx::pattern::detail {
namespace {

/// Module types sharing a Python package.
struct ModuleFamily {
  const char* package;
  std::vector<const char*> classes;
};

// Function-local: OpCatalog is first used while other files register their
// module kinds, before this file's namespace-scope objects would be built.
const std::vector<ModuleFamily>& module_families() {
  static const std::vector<ModuleFamily> kFamilies = {
    // float modules configs name beyond the ones qfx runs (ir::ModuleRegistry)
    {"torch.nn.", {"GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNCell", "MultiheadAttention",
                   "Sequential", "Upsample", "ZeroPad2d", "ConstantPad2d", "PixelShuffle"}},
    {"torch.ao.nn.intrinsic.",
     {"BNReLU2d", "BNReLU3d", "ConvBn1d", "ConvBn2d", "ConvBn3d", "ConvBnReLU1d", "ConvBnReLU2d",
      "ConvBnReLU3d", "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearBn1d", "LinearReLU", "ConvAdd2d",
      "ConvAddReLU2d", "LinearLeakyReLU", "LinearTanh"}},
    {"torch.ao.nn.intrinsic.qat.",
     {"ConvBn1d", "ConvBn2d", "ConvBn3d", "ConvBnReLU1d", "ConvBnReLU2d", "ConvBnReLU3d", "ConvReLU1d",
      "ConvReLU2d", "ConvReLU3d", "LinearBn1d", "LinearReLU"}},
    {"torch.ao.nn.qat.", {"Conv1d", "Conv2d", "Conv3d", "Embedding", "EmbeddingBag", "Linear"}},
    {"torch.ao.nn.quantized.reference.",
     {"Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "Embedding",
      "EmbeddingBag", "GRUCell", "LSTM", "LSTMCell", "Linear", "RNNCell"}},
    {"torch.ao.nn.quantized.",
     {"BatchNorm2d", "BatchNorm3d", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
      "ConvTranspose3d", "DeQuantize", "Dropout", "ELU", "Embedding", "EmbeddingBag", "FXFloatFunctional",
      "FloatFunctional", "GroupNorm", "Hardswish", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
      "LSTM", "LayerNorm", "LeakyReLU", "Linear", "MaxPool2d", "MultiheadAttention", "PReLU",
      "QFunctional", "Quantize", "ReLU6", "Sigmoid", "Softmax"}},
    {"torch.ao.nn.quantized.dynamic.",
     {"Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "GRU",
      "GRUCell", "LSTM", "LSTMCell", "Linear", "RNNCell"}},
    {"torch.ao.nn.intrinsic.quantized.",
     {"BNReLU2d", "BNReLU3d", "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearReLU", "ConvAdd2d",
      "ConvAddReLU2d", "LinearLeakyReLU", "LinearTanh"}},
    {"torch.ao.nn.intrinsic.quantized.dynamic.", {"LinearReLU"}},
  };
  return kFamilies;
}

// Functions the built-in backends name beyond the ones the interpreter runs.
const char* const kFunctions[] = {
    "torch.addmm", "torch.repeat_interleave", "torch.nn.functional.interpolate",
    "torch.nn.functional.hardtanh_", "torch.nn.functional.conv_transpose1d",
    "torch.nn.functional.conv_transpose2d", "torch.nn.functional.conv_transpose3d",
    "torch.nn.functional.embedding_bag",
};
}  // namespace

const std::vector<OpNameRow>& known_op_names() {
  static const std::vector<OpNameRow> kRows = [] {
    std::vector<OpNameRow> rows;
    for (const ModuleFamily& family : module_families()) {
      for (const char* cls : family.classes) rows.push_back({std::string(family.package) + cls, OpKind::kModule});
    }
    for (const char* fn : kFunctions) rows.push_back({fn, OpKind::kFunction});
    return rows;
  }();
  return kRows;
}

const std::vector<std::pair<const char*, const char*>>& module_path_aliases() {
  // Longest prefix first: the first one that matches applies.
  static const std::vector<std::pair<const char*, const char*>> kAliases = {
      {"torch.nn.intrinsic.quantized.dynamic.", "torch.ao.nn.intrinsic.quantized.dynamic."},
      {"torch.nn.intrinsic.quantized.", "torch.ao.nn.intrinsic.quantized."},
      {"torch.nn.intrinsic.qat.", "torch.ao.nn.intrinsic.qat."},
      {"torch.nn.intrinsic.", "torch.ao.nn.intrinsic."},
      {"torch.nn.qat.", "torch.ao.nn.qat."},
      {"torch.nn.quantized._reference.", "torch.ao.nn.quantized.reference."},
      {"torch.ao.nn.quantized._reference.", "torch.ao.nn.quantized.reference."},
      {"torch.nn.quantized.dynamic.", "torch.ao.nn.quantized.dynamic."},
      {"torch.nn.quantized.", "torch.ao.nn.quantized."},
  };
  return kAliases;
}

const std::vector<std::pair<const char*, const char*>>& function_aliases() {
  static const std::vector<std::pair<const char*, const char*>> kAliases = {
      {"torch.conv1d", "torch.nn.functional.conv1d"},
      {"torch.conv2d", "torch.nn.functional.conv2d"},
      {"torch.conv3d", "torch.nn.functional.conv3d"},
      {"torch.conv_transpose1d", "torch.nn.functional.conv_transpose1d"},
      {"torch.conv_transpose2d", "torch.nn.functional.conv_transpose2d"},
      {"torch.conv_transpose3d", "torch.nn.functional.conv_transpose3d"},
      {"torch._C._nn.linear", "torch.nn.functional.linear"},
      {"torch.avg_pool1d", "torch.nn.functional.avg_pool1d"},
      {"torch._C._nn.avg_pool2d", "torch.nn.functional.avg_pool2d"},
      {"torch._C._nn.avg_pool3d", "torch.nn.functional.avg_pool3d"},
      {"torch.adaptive_avg_pool1d", "torch.nn.functional.adaptive_avg_pool1d"},
      {"torch._C._nn.gelu", "torch.nn.functional.gelu"},
      {"torch.prelu", "torch.nn.functional.prelu"},
      {"torch._C._nn.hardtanh_", "torch.nn.functional.hardtanh_"},
  };
  return kAliases;
}

}  // namespace qfx::pattern::detail
