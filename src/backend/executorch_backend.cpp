// The executorch backend of PyTorch 1.13: linear, conv2d (+ relu), add, a few
// share-qparams ops and batch norm. 1.13's definition never returns (its
// share-qparams loop appends to the list it iterates); qfx builds the configs
// that loop was meant to build, as upstream fixed it.

#include "qfx/backend/builtin_backends.h"

#include "common_operator_configs.h"
#include "dtype_configs.h"

namespace qfx::backend {
namespace {

using namespace detail;  // NOLINT: the op-family builders and dtype configs

PatternConfigs executorch_linear_configs() {
  const DTypeConfigs dt = {weighted_op_int8(), default_dynamic_int8(), default_dynamic_float16()};
  return {weighted_module_config("torch.nn.Linear", "torch.nn.Linear", "torch.ao.nn.quantized.reference.Linear",
                                 "torch.ao.nn.qat.Linear", dt),
          op_config("torch.nn.functional.linear", dt)._set_input_type_to_index({{"weight", 1}, {"bias", 2}})};
}

PatternConfigs executorch_conv_configs() {
  const DTypeConfigs dt = {weighted_op_int8()};
  const std::string conv = "torch.nn.Conv2d", func = "torch.nn.functional.conv2d";
  const std::string reference = "torch.ao.nn.quantized.reference.Conv2d";
  const std::string fused = "torch.ao.nn.intrinsic.ConvReLU2d";
  PatternConfigs out = {
      weighted_module_config(conv, conv, reference, "torch.ao.nn.qat.Conv2d", dt),
      op_config(func, dt)._set_input_type_to_index({{"weight", 1}, {"bias", 2}}),
      fusion_config({conv, "torch.nn.ReLU"}, fused, dt),
      fusion_config({conv, "torch.nn.functional.relu"}, fused, dt),
      weighted_module_config(fused, conv, reference, "torch.ao.nn.intrinsic.qat.ConvReLU2d", dt),
  };
  for (const char* relu : {"torch.nn.ReLU", "torch.nn.functional.relu"}) {
    out.push_back(
        BackendPatternConfig().set_pattern({func, relu}).set_observation_type(kDifferent).set_dtype_configs(dt));
  }
  return out;
}

PatternConfigs executorch_binary_op_configs() {
  const std::map<int64_t, ObservationType> by_tensor_args = {
      {0, kDifferent}, {1, ObservationType::OUTPUT_SHARE_OBSERVER_WITH_INPUT}, {2, kDifferent}};
  PatternConfigs out;
  for (const char* op : {"operator.add", "torch.add"}) {
    out.push_back(BackendPatternConfig(op)
                      .set_dtype_configs({weighted_op_int8()})
                      ._set_num_tensor_args_to_observation_type(by_tensor_args));
  }
  return out;
}

PatternConfigs executorch_share_qparams_op_configs() {
  PatternConfigs out;
  for (const char* op :
       {"torch.nn.functional.adaptive_avg_pool2d", "torch.nn.functional.relu", "torch.nn.functional.relu6",
        "torch.nn.AdaptiveAvgPool2d", "torch.squeeze", "permute", "reshape", "relu", "relu_", "squeeze", "squeeze_"}) {
    out.push_back(op_config(op, {default_op_quint8()}, ObservationType::OUTPUT_SHARE_OBSERVER_WITH_INPUT));
  }
  return out;
}

}  // namespace

BackendConfig get_executorch_backend_config() {
  BackendConfig config("executorch");
  config.set_backend_pattern_configs(executorch_linear_configs())
      .set_backend_pattern_configs(executorch_conv_configs())
      .set_backend_pattern_configs(executorch_binary_op_configs())
      .set_backend_pattern_configs(executorch_share_qparams_op_configs())
      .set_backend_pattern_config(op_config("torch.nn.BatchNorm2d", {default_op_quint8()}));
  return config;
}

}  // namespace qfx::backend
