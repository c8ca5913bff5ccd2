// The op families the built-in backends share (PyTorch 1.13's
// `_common_operator_config_utils.py`), transcribed config by config and in
// the same order, with patterns in forward order.
// Tables, one row per line (not reflowed by clang-format).
// clang-format off

#include "common_operator_configs.h"

#include "qfx/quant/qconfig_mapping.h"

namespace qfx::backend::detail {
namespace {


/// A sequence config with its dtype configs and nothing else (functional
/// patterns the backend quantizes as a whole without a fused module).
BackendPatternConfig sequence_config(const std::vector<std::string>& sequence, const DTypeConfigs& dtype_configs) {
  return BackendPatternConfig().set_pattern(sequence).set_observation_type(kDifferent).set_dtype_configs(dtype_configs);
}

/// A fusion config whose fuser is a registered fuser method.
BackendPatternConfig fuser_config(const std::vector<std::string>& sequence, const std::string& fuser_method,
                                  const DTypeConfigs& dtype_configs) {
  return BackendPatternConfig().set_pattern(sequence).set_dtype_configs(dtype_configs).set_fuser_method(fuser_method);
}

/// A fused (or QAT) module that prepare_qat swaps for `qat` and nothing more.
BackendPatternConfig qat_swap_config(const std::string& module, const std::string& qat,
                                     const DTypeConfigs& dtype_configs) {
  return BackendPatternConfig(module).set_dtype_configs(dtype_configs).set_qat_module(qat);
}

void append(PatternConfigs& to, PatternConfigs from) {
  for (BackendPatternConfig& c : from) to.push_back(std::move(c));
}

/// The names of one conv dimension (PyTorch's `_ConvMetadata`).
struct ConvNames {
  std::string root, transpose, bn, reference, transpose_reference;
  std::string fused_conv_relu, fused_conv_bn, fused_conv_bn_relu;
  std::string qat, relu_qat, bn_qat, bn_relu_qat, func;
};

ConvNames conv_names(int dim) {
  const std::string d = std::to_string(dim) + "d";
  const std::string nni = "torch.ao.nn.intrinsic.", nniqat = "torch.ao.nn.intrinsic.qat.";
  const std::string nnqr = "torch.ao.nn.quantized.reference.";
  return {"torch.nn.Conv" + d,       "torch.nn.ConvTranspose" + d,   "torch.nn.BatchNorm" + d,
          nnqr + "Conv" + d,         nnqr + "ConvTranspose" + d,     nni + "ConvReLU" + d,
          nni + "ConvBn" + d,        nni + "ConvBnReLU" + d,         "torch.ao.nn.qat.Conv" + d,
          nniqat + "ConvReLU" + d,   nniqat + "ConvBn" + d,          nniqat + "ConvBnReLU" + d,
          "torch.nn.functional.conv" + d};
}

PatternConfigs conv_dim_configs(const ConvNames& c, const DTypeConfigs& dt) {
  PatternConfigs out;
  // (1) single conv modules and functions
  out.push_back(weighted_module_config(c.root, c.root, c.reference, c.qat, dt));
  out.push_back(weighted_module_config(c.qat, c.root, c.reference, "", dt));
  out.push_back(op_config(c.func, dt)._set_input_type_to_index({{"weight", 1}, {"bias", 2}}));
  // (2) conv + relu: fusion, fused and QAT modules, functional forms
  out.push_back(fusion_config({c.root, "torch.nn.ReLU"}, c.fused_conv_relu, dt));
  out.push_back(fusion_config({c.root, "torch.nn.functional.relu"}, c.fused_conv_relu, dt));
  out.push_back(weighted_module_config(c.fused_conv_relu, c.root, c.reference, c.relu_qat, dt));
  out.push_back(weighted_module_config(c.relu_qat, c.root, c.reference, "", dt));
  out.push_back(sequence_config({c.func, "torch.nn.ReLU"}, dt));
  out.push_back(sequence_config({c.func, "torch.nn.functional.relu"}, dt));
  // PyTorch 1.13 repeats the fused and QAT conv-relu configs here; the repeats
  // replace the ones above (no observation settings, no reference module).
  out.push_back(qat_swap_config(c.fused_conv_relu, c.relu_qat, dt));
  out.push_back(BackendPatternConfig(c.relu_qat).set_dtype_configs(dt).set_root_module(c.root)
                    .set_reference_quantized_module(c.reference));
  // (3) conv + bn (+ relu): fusion, fused and QAT modules
  out.push_back(fuser_config({c.root, c.bn}, "fuse_conv_bn", dt).set_fused_module(c.fused_conv_bn));
  out.push_back(fuser_config({c.root, c.bn, "torch.nn.ReLU"}, "fuse_conv_bn_relu", dt)
                    .set_fused_module(c.fused_conv_bn_relu));
  out.push_back(fuser_config({c.root, c.bn, "torch.nn.functional.relu"}, "fuse_conv_bn_relu", dt)
                    .set_root_module(c.root).set_fused_module(c.fused_conv_bn_relu));
  out.push_back(qat_swap_config(c.fused_conv_bn, c.bn_qat, dt));
  out.push_back(qat_swap_config(c.fused_conv_bn_relu, c.bn_relu_qat, dt));
  out.push_back(weighted_module_config(c.bn_qat, c.root, c.reference, "", dt));
  out.push_back(weighted_module_config(c.bn_relu_qat, c.root, c.reference, "", dt));
  // (4) conv transpose, and conv transpose + bn
  out.push_back(BackendPatternConfig(c.transpose).set_dtype_configs(dt).set_root_module(c.transpose)
                    .set_reference_quantized_module(c.transpose_reference));
  out.push_back(fuser_config({c.transpose, c.bn}, "fuse_convtranspose_bn", dt).set_root_module(c.transpose)
                    .set_reference_quantized_module(c.transpose_reference));
  return out;
}

}  // namespace

BackendPatternConfig op_config(const std::string& op, const DTypeConfigs& dtype_configs, ObservationType type) {
  return BackendPatternConfig(op).set_observation_type(type).set_dtype_configs(dtype_configs);
}

BackendPatternConfig weighted_module_config(const std::string& module, const std::string& root,
                                            const std::string& reference, const std::string& qat,
                                            const DTypeConfigs& dtype_configs) {
  BackendPatternConfig c = op_config(module, dtype_configs).set_root_module(root).set_reference_quantized_module(reference);
  if (!qat.empty()) c.set_qat_module(qat);
  return c;
}

BackendPatternConfig fusion_config(const std::vector<std::string>& sequence, const std::string& fused_module,
                                   const DTypeConfigs& dtype_configs) {
  return BackendPatternConfig().set_pattern(sequence).set_dtype_configs(dtype_configs).set_fused_module(fused_module);
}

PatternConfigs binary_op_configs(const DTypeConfigs& dt) {
  // The observation type by number of tensor arguments (a scalar operand shares).
  const std::map<int64_t, ObservationType> by_tensor_args = {{0, kDifferent}, {1, kShare}, {2, kDifferent}};
  PatternConfigs out;
  for (const char* op : {"operator.add", "torch.add", "operator.mul", "torch.mul"}) {
    for (const char* relu : {"torch.nn.ReLU", "torch.nn.functional.relu", "torch.relu"}) {
      out.push_back(BackendPatternConfig().set_pattern({op, relu}).set_dtype_configs(dt)
                        ._set_num_tensor_args_to_observation_type(by_tensor_args));
    }
    out.push_back(BackendPatternConfig(op).set_dtype_configs(dt)._set_num_tensor_args_to_observation_type(by_tensor_args));
  }
  out.push_back(BackendPatternConfig("torch.matmul").set_dtype_configs(dt));
  return out;
}

PatternConfigs linear_configs(const DTypeConfigs& dt) {
  const std::string linear = "torch.nn.Linear", reference = "torch.ao.nn.quantized.reference.Linear";
  const std::string qat = "torch.ao.nn.qat.Linear", fused_relu = "torch.ao.nn.intrinsic.LinearReLU";
  const std::string qat_relu = "torch.ao.nn.intrinsic.qat.LinearReLU", fused_bn = "torch.ao.nn.intrinsic.LinearBn1d";
  const std::string func = "torch.nn.functional.linear";
  PatternConfigs out;
  // (1) linear module, QAT module, function
  out.push_back(weighted_module_config(linear, linear, reference, qat, dt));
  out.push_back(weighted_module_config(qat, linear, reference, "", dt));
  out.push_back(op_config(func, dt)._set_input_type_to_index({{"weight", 1}, {"bias", 2}}));
  // (2) linear + relu: fusion, fused and QAT modules, functional forms
  out.push_back(fusion_config({linear, "torch.nn.ReLU"}, fused_relu, dt));
  out.push_back(fusion_config({linear, "torch.nn.functional.relu"}, fused_relu, dt));
  out.push_back(weighted_module_config(fused_relu, linear, reference, qat_relu, dt));
  out.push_back(weighted_module_config(qat_relu, linear, reference, "", dt));
  out.push_back(sequence_config({func, "torch.nn.ReLU"}, dt));
  out.push_back(sequence_config({func, "torch.nn.functional.relu"}, dt));
  // (3) linear + batchnorm: fusion, fused and QAT modules
  out.push_back(fuser_config({linear, "torch.nn.BatchNorm1d"}, "fuse_linear_bn", dt).set_fused_module(fused_bn));
  out.push_back(weighted_module_config(fused_bn, linear, reference, "torch.ao.nn.intrinsic.qat.LinearBn1d", dt));
  out.push_back(weighted_module_config("torch.ao.nn.intrinsic.qat.LinearBn1d", linear, reference, "", dt));
  return out;
}

PatternConfigs conv_configs(const DTypeConfigs& dt) {
  PatternConfigs out;
  for (int dim : {1, 2, 3}) append(out, conv_dim_configs(conv_names(dim), dt));
  return out;
}

BackendPatternConfig cat_config(const DTypeConfigs& dt) { return op_config("torch.cat", dt, kShare); }

PatternConfigs ln_configs(const DTypeConfigs& dt) {
  return {op_config("torch.nn.LayerNorm", dt),
          op_config("torch.nn.functional.layer_norm", dt)._set_input_type_to_index({{"weight", 2}, {"bias", 3}})};
}

PatternConfigs default_op_configs(const DTypeConfigs& dt) {
  PatternConfigs out;
  for (const char* op : {"torch.nn.ELU", "torch.nn.LeakyReLU", "torch.nn.Hardswish", "torch.nn.InstanceNorm1d",
                         "torch.nn.InstanceNorm2d", "torch.nn.InstanceNorm3d", "torch.nn.Dropout", "torch.nn.PReLU",
                         "torch.nn.functional.elu", "torch.nn.functional.hardswish",
                         "torch.nn.functional.leaky_relu", "torch.nn.functional.dropout"}) {
    out.push_back(op_config(op, dt));
  }
  out.push_back(op_config("torch.nn.functional.group_norm", dt)._set_input_type_to_index({{"weight", 2}, {"bias", 3}}));
  out.push_back(op_config("torch.nn.functional.instance_norm", dt)._set_input_type_to_index({{"weight", 3}, {"bias", 4}}));
  return out;
}

PatternConfigs fixed_qparams_op_configs(const DTypeConfigs& dt) {
  PatternConfigs out;
  for (const auto& [op, observer] : quant::fixed_qparams_op_observers()) {
    out.push_back(op_config(op, dt)
                      ._set_overwrite_output_fake_quantize(quant::ObserverSpec("FixedQParamsFakeQuantize", {{"observer", observer}}))
                      ._set_overwrite_output_observer(observer));
  }
  return out;
}

PatternConfigs share_qparams_op_configs(const DTypeConfigs& dt) {
  // Ops that work on quantized values directly: the output shares the input's qparams.
  PatternConfigs out;
  for (const char* op :
       {"torch.nn.AdaptiveAvgPool1d", "torch.nn.AdaptiveAvgPool2d", "torch.nn.AdaptiveAvgPool3d", "torch.nn.AvgPool1d",
        "torch.nn.AvgPool2d", "torch.nn.AvgPool3d", "torch.nn.Hardtanh", "torch.nn.Identity", "torch.nn.MaxPool1d",
        "torch.nn.MaxPool2d", "torch.nn.MaxPool3d", "torch.nn.ReLU", "torch.nn.ReLU6",
        "torch.nn.functional.adaptive_avg_pool1d", "torch.nn.functional.adaptive_avg_pool2d",
        "torch.nn.functional.adaptive_avg_pool3d", "torch.nn.functional.hardtanh", "torch.nn.functional.hardtanh_",
        "torch.nn.functional.interpolate", "torch.nn.functional.max_pool1d", "torch.nn.functional.max_pool2d",
        "torch.nn.functional.max_pool3d", "torch.nn.functional.relu", "torch.nn.functional.relu6",
        "torch.nn.functional.avg_pool1d", "torch.nn.functional.avg_pool2d", "torch.nn.functional.avg_pool3d",
        "torch.clamp", "torch.flatten", "torch.mean", "torch.repeat_interleave", "torch.transpose", "torch.squeeze",
        "torch.stack", "torch.unsqueeze", "operator.floordiv", "contiguous", "clamp", "detach", "detach_", "mean",
        "permute", "repeat", "repeat_interleave", "reshape", "resize_", "relu", "relu_", "shape", "size", "squeeze",
        "squeeze_", "transpose", "unsqueeze", "unsqueeze_", "view"}) {
    out.push_back(op_config(op, dt, kShare));
  }
  return out;
}

PatternConfigs bn_configs(const DTypeConfigs& dt) {
  const std::pair<const char*, const char*> bn_to_fused[] = {
      {"torch.nn.BatchNorm2d", "torch.ao.nn.intrinsic.BNReLU2d"},
      {"torch.nn.BatchNorm3d", "torch.ao.nn.intrinsic.BNReLU3d"},
  };
  PatternConfigs out;
  for (const auto& [bn, fused] : bn_to_fused) {
    out.push_back(fusion_config({bn, "torch.nn.ReLU"}, fused, dt));
    out.push_back(fusion_config({bn, "torch.nn.functional.relu"}, fused, dt));
    out.push_back(op_config(bn, dt));
  }
  for (const auto& [bn, fused] : bn_to_fused) out.push_back(op_config(fused, dt));
  return out;
}

PatternConfigs rnn_op_configs(const DTypeConfigs& dt) {
  PatternConfigs out;
  // GRU as PyTorch 2.x lists it (1.13 has no reference GRU; docs/divergences.md)
  for (const char* rnn : {"GRUCell", "LSTMCell", "RNNCell", "LSTM", "GRU"}) {
    std::string op = std::string("torch.nn.") + rnn;
    out.push_back(weighted_module_config(op, op, std::string("torch.ao.nn.quantized.reference.") + rnn, "", dt));
  }
  return out;
}

PatternConfigs embedding_op_configs(const DTypeConfigs& dt) {
  PatternConfigs out;
  for (const char* embedding : {"Embedding", "EmbeddingBag"}) {
    std::string op = std::string("torch.nn.") + embedding;
    std::string qat = std::string("torch.ao.nn.qat.") + embedding;
    std::string reference = std::string("torch.ao.nn.quantized.reference.") + embedding;
    // Weight-only: input and output stay float (PyTorch marks this as temporary).
    out.push_back(weighted_module_config(op, op, reference, qat, dt)._set_input_output_observed(false));
    out.push_back(weighted_module_config(qat, op, reference, "", dt)._set_input_output_observed(false));
  }
  return out;
}

}  // namespace qfx::backend::detail
