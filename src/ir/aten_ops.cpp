// The ATen -> FX op table. In-place ATen variants (`add_`, `relu_`) come from
// Python code such as `out += identity` or `F.relu(x, inplace=True)`; FX
// records the first as the out-of-place operator (a Proxy has no __iadd__)
// and the second with `inplace=True`.

#include "qfx/ir/aten_ops.h"

#include <map>
#include <unordered_map>

namespace qfx::ir {
namespace {

constexpr Opcode kFn = Opcode::kCallFunction;
constexpr Opcode kMethod = Opcode::kCallMethod;

}  // namespace

const std::vector<OpMapping>& op_mappings() {
  static const std::vector<OpMapping> kRows = {
      // x + y, x += y  =>  operator.add (torch.add when alpha is given)
      {"aten::add", kFn, "operator.add", {}, 2, "torch.add"},
      {"aten::add_", kFn, "operator.add", {}, 2, "torch.add"},
      {"aten::sub", kFn, "operator.sub", {}, 2, "torch.sub"},
      {"aten::sub_", kFn, "operator.sub", {}, 2, "torch.sub"},
      // 1 - x  =>  operator.sub(1, x)
      {"aten::rsub", kFn, "operator.sub", {1, 0}, 2},
      {"aten::mul", kFn, "operator.mul", {}, 2},
      {"aten::mul_", kFn, "operator.mul", {}, 2},
      {"aten::div", kFn, "operator.truediv", {}, 2, "torch.div"},
      {"aten::div_", kFn, "operator.truediv", {}, 2, "torch.div"},
      {"aten::floor_divide", kFn, "operator.floordiv", {}, 2},
      {"aten::floordiv", kFn, "operator.floordiv", {}, 2},  // int // int in scripted code
      {"aten::neg", kFn, "operator.neg", {}, 1},
      {"aten::remainder", kFn, "operator.mod", {}, 2},
      {"aten::pow", kFn, "operator.pow", {}, 2},
      // x > 0, ... (recorded so that an `if` on them reports data-dependent control flow)
      {"aten::gt", kFn, "operator.gt", {}, 2},
      {"aten::lt", kFn, "operator.lt", {}, 2},
      {"aten::ge", kFn, "operator.ge", {}, 2},
      {"aten::le", kFn, "operator.le", {}, 2},
      {"aten::eq", kFn, "operator.eq", {}, 2},
      {"aten::ne", kFn, "operator.ne", {}, 2},
      {"aten::matmul", kFn, "torch.matmul"},
      {"aten::bmm", kFn, "torch.bmm"},
      {"aten::mm", kFn, "torch.mm"},
      {"aten::cat", kFn, "torch.cat"},
      {"aten::concat", kFn, "torch.cat"},
      {"aten::stack", kFn, "torch.stack"},
      {"aten::roll", kFn, "torch.roll"},
      {"aten::flatten", kFn, "torch.flatten"},
      {"aten::clamp", kFn, "torch.clamp"},
      {"aten::sigmoid", kFn, "torch.sigmoid"},
      {"aten::tanh", kFn, "torch.tanh"},
      {"aten::exp", kFn, "torch.exp"},
      {"aten::sqrt", kFn, "torch.sqrt"},
      // F.relu(x), F.relu(x, inplace=True), ...
      {"aten::relu", kFn, "torch.nn.functional.relu"},
      {"aten::relu_", kFn, "torch.nn.functional.relu", {}, -1, "", true},
      {"aten::relu6", kFn, "torch.nn.functional.relu6"},
      {"aten::hardtanh", kFn, "torch.nn.functional.hardtanh"},
      {"aten::hardtanh_", kFn, "torch.nn.functional.hardtanh", {}, -1, "", true},
      {"aten::hardswish", kFn, "torch.nn.functional.hardswish"},
      {"aten::hardswish_", kFn, "torch.nn.functional.hardswish", {}, -1, "", true},
      {"aten::hardsigmoid", kFn, "torch.nn.functional.hardsigmoid"},
      {"aten::hardsigmoid_", kFn, "torch.nn.functional.hardsigmoid", {}, -1, "", true},
      {"aten::silu", kFn, "torch.nn.functional.silu"},
      {"aten::silu_", kFn, "torch.nn.functional.silu", {}, -1, "", true},
      {"aten::gelu", kFn, "torch.nn.functional.gelu"},
      {"aten::elu", kFn, "torch.nn.functional.elu", {}, 2},
      {"aten::elu_", kFn, "torch.nn.functional.elu", {}, 2, "", true},
      {"aten::leaky_relu", kFn, "torch.nn.functional.leaky_relu"},
      {"aten::leaky_relu_", kFn, "torch.nn.functional.leaky_relu", {}, -1, "", true},
      {"aten::prelu", kFn, "torch.nn.functional.prelu"},
      {"aten::softmax", kFn, "torch.nn.functional.softmax", {0, 1}},
      {"aten::log_softmax", kFn, "torch.nn.functional.log_softmax", {0, 1}},
      {"aten::linear", kFn, "torch.nn.functional.linear"},
      {"aten::conv1d", kFn, "torch.nn.functional.conv1d"},
      {"aten::conv2d", kFn, "torch.nn.functional.conv2d"},
      {"aten::conv3d", kFn, "torch.nn.functional.conv3d"},
      {"aten::conv_transpose1d", kFn, "torch.nn.functional.conv_transpose1d"},
      {"aten::conv_transpose2d", kFn, "torch.nn.functional.conv_transpose2d"},
      {"aten::conv_transpose3d", kFn, "torch.nn.functional.conv_transpose3d"},
      {"aten::max_pool1d", kFn, "torch.nn.functional.max_pool1d"},
      {"aten::max_pool2d", kFn, "torch.nn.functional.max_pool2d"},
      {"aten::max_pool3d", kFn, "torch.nn.functional.max_pool3d"},
      {"aten::avg_pool1d", kFn, "torch.nn.functional.avg_pool1d"},
      {"aten::avg_pool2d", kFn, "torch.nn.functional.avg_pool2d"},
      {"aten::avg_pool3d", kFn, "torch.nn.functional.avg_pool3d"},
      {"aten::adaptive_avg_pool1d", kFn, "torch.nn.functional.adaptive_avg_pool1d"},
      {"aten::adaptive_avg_pool2d", kFn, "torch.nn.functional.adaptive_avg_pool2d"},
      {"aten::adaptive_avg_pool3d", kFn, "torch.nn.functional.adaptive_avg_pool3d"},
      {"aten::dropout", kFn, "torch.nn.functional.dropout"},
      {"aten::dropout_", kFn, "torch.nn.functional.dropout", {}, -1, "", true},
      // aten (input, weight, bias, mean, var, ...) => F (input, mean, var, weight, bias, ...)
      {"aten::batch_norm", kFn, "torch.nn.functional.batch_norm", {0, 3, 4, 1, 2, 5, 6, 7}},
      {"aten::instance_norm", kFn, "torch.nn.functional.instance_norm", {0, 3, 4, 1, 2, 5, 6, 7}},
      {"aten::layer_norm", kFn, "torch.nn.functional.layer_norm", {0, 1, 2, 3, 4}},
      {"aten::group_norm", kFn, "torch.nn.functional.group_norm", {0, 1, 2, 3, 4}},
      // aten (weight, indices, padding_idx) => F (input, weight, padding_idx)
      {"aten::embedding", kFn, "torch.nn.functional.embedding", {1, 0, 2}},
      {"aten::pad", kFn, "torch.nn.functional.pad"},
      {"aten::pixel_shuffle", kFn, "torch.nn.functional.pixel_shuffle"},
      {"aten::pixel_unshuffle", kFn, "torch.nn.functional.pixel_unshuffle"},
      {"aten::channel_shuffle", kFn, "torch.nn.functional.channel_shuffle"},
      {"aten::quantize_per_tensor", kFn, "torch.quantize_per_tensor"},
      {"aten::quantize_per_channel", kFn, "torch.quantize_per_channel"},
      // Tensor methods
      {"aten::size", kMethod, "size"},
      {"aten::dim", kMethod, "dim"},
      {"aten::numel", kMethod, "numel"},
      {"aten::view", kMethod, "view"},
      {"aten::reshape", kMethod, "reshape"},
      {"aten::permute", kMethod, "permute"},
      {"aten::transpose", kMethod, "transpose"},
      {"aten::t", kMethod, "t"},
      {"aten::contiguous", kMethod, "contiguous"},
      {"aten::unsqueeze", kMethod, "unsqueeze"},
      {"aten::squeeze", kMethod, "squeeze"},
      {"aten::expand", kMethod, "expand", {0, 1}},
      {"aten::repeat", kMethod, "repeat"},
      {"aten::new_zeros", kMethod, "new_zeros"},
      {"aten::chunk", kMethod, "chunk"},
      {"aten::mean", kMethod, "mean"},
      {"aten::sum", kMethod, "sum"},
      {"aten::detach", kMethod, "detach"},
      {"aten::clone", kMethod, "clone"},
      {"aten::type_as", kMethod, "type_as"},
      {"aten::to", kMethod, "to", {0, 1}},
      {"aten::dequantize", kMethod, "dequantize"},
      {"aten::sigmoid_", kMethod, "sigmoid_"},
      {"aten::masked_fill", kMethod, "masked_fill"},
      {"aten::narrow", kMethod, "narrow"},
      {"aten::repeat_interleave", kMethod, "repeat_interleave"},
  };
  return kRows;
}

const OpMapping* find_op_mapping(const std::string& aten_name) {
  static const auto kIndex = [] {
    std::unordered_map<std::string, const OpMapping*> index;
    for (const OpMapping& row : op_mappings()) index.emplace(row.aten, &row);
    return index;
  }();
  auto it = kIndex.find(aten_name);
  return it == kIndex.end() ? nullptr : it->second;
}

const AtenSpelling* find_aten_spelling(const std::string& fx_target, bool inplace) {
  static const auto kIndex = [] {
    std::map<std::pair<std::string, bool>, AtenSpelling> index;
    for (const OpMapping& row : op_mappings()) {
      if (row.op != Opcode::kCallFunction) continue;
      index.try_emplace({row.target, row.inplace}, AtenSpelling{row.aten, {row.order.begin(), row.order.end()}});
    }
    return index;
  }();
  auto it = kIndex.find({fx_target, inplace});
  return it == kIndex.end() ? nullptr : &it->second;
}

const std::vector<UpsampleMapping>& upsample_mappings() {
  // F.interpolate(input, size, scale_factor, mode, align_corners) as traced: aten::upsample_<mode>
  // (input, output_size, [align_corners,] scale_factors)
  static const std::vector<UpsampleMapping> kRows = {
      {"aten::upsample_nearest1d", "nearest", false},    {"aten::upsample_nearest2d", "nearest", false},
      {"aten::upsample_nearest3d", "nearest", false},    {"aten::upsample_linear1d", "linear", true},
      {"aten::upsample_bilinear2d", "bilinear", true},   {"aten::upsample_bicubic2d", "bicubic", true},
      {"aten::upsample_trilinear3d", "trilinear", true},
  };
  return kRows;
}

const UpsampleMapping* find_upsample_mapping(const std::string& aten_name) {
  for (const UpsampleMapping& row : upsample_mappings()) {
    if (aten_name == row.aten) return &row;
  }
  return nullptr;
}

}  // namespace qfx::ir
