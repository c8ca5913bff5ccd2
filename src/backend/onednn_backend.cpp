// The onednn backend as PyTorch 2.x defines it: fbgemm-like op configs, plus
// conv2d + add (+ relu) fusions written in the complex pattern format with
// root-node and extra-inputs getters, and linear + leaky_relu / tanh fusions.

#include "qfx/backend/builtin_backends.h"

#include "common_operator_configs.h"
#include "dtype_configs.h"
#include "qfx/backend/backend_registry.h"

namespace qfx::backend {
namespace {

using namespace detail;  // NOLINT: the op-family builders and dtype configs
using pattern::NestedPattern;

// The getters of every conv + add pattern: in forward order the conv is the
// first op and the other operand of the add the MatchAllNode, on either side.
ir::Node* first_op_node(const pattern::PatternMatch& m) {
  const auto& elements = m.pattern->elements();
  for (size_t i = 0; i < elements.size(); ++i) {
    if (!elements[i].op.is_any()) return m.node(i);
  }
  return nullptr;
}

std::vector<ir::Argument> match_all_values(const pattern::PatternMatch& m) {
  std::vector<ir::Argument> extra;
  const auto& elements = m.pattern->elements();
  for (size_t i = 0; i < elements.size(); ++i) {
    if (elements[i].op.is_any()) extra.push_back(m.values[i]);
  }
  return extra;
}

const char* const kConvAddKinds[] = {"conv_add", "conv_bn_add", "conv_add_relu", "conv_bn_add_relu"};

}  // namespace

void register_builtins() {
  BackendRegistry& registry = BackendRegistry::instance();
  for (const char* kind : kConvAddKinds) {
    for (const char* side : {"left", "right"}) {
      registry.add_root_node_getter(std::string("_") + kind + "_root_node_getter_" + side, first_op_node);
      registry.add_extra_inputs_getter(std::string("_") + kind + "_extra_inputs_getter_" + side, match_all_values);
    }
  }
}

namespace {

/// conv (+ bn) + add (+ relu), the conv on the add's `side`, as PyTorch's onednn.py.
BackendPatternConfig conv_add_config(bool with_bn, bool with_relu, const std::string& add_op, const std::string& side,
                                     const DTypeConfigs& dt) {
  NestedPattern conv = with_bn ? NestedPattern("torch.nn.BatchNorm2d", {"torch.nn.Conv2d"}) : "torch.nn.Conv2d";
  NestedPattern add = side == "left" ? NestedPattern(add_op, {conv, pattern::kMatchAllNode})
                                     : NestedPattern(add_op, {pattern::kMatchAllNode, conv});
  NestedPattern root = with_relu ? NestedPattern("torch.nn.ReLU", {add}) : add;
  std::string kind = std::string(with_bn ? "conv_bn_add" : "conv_add") + (with_relu ? "_relu" : "");
  return BackendPatternConfig()
      ._set_pattern_complex_format(root)
      .set_observation_type(kDifferent)
      .set_dtype_configs(dt)
      .set_fuser_method("_fuse_" + kind + "_" + side)
      ._set_root_node_getter("_" + kind + "_root_node_getter_" + side)
      ._set_extra_inputs_getter("_" + kind + "_extra_inputs_getter_" + side)
      .set_fused_module(with_relu ? "torch.ao.nn.intrinsic.ConvAddReLU2d" : "torch.ao.nn.intrinsic.ConvAdd2d");
}

void append_conv_add_configs(PatternConfigs& configs, bool with_relu, const DTypeConfigs& dt) {
  for (const char* side : {"left", "right"}) {
    for (bool with_bn : {true, false}) {
      for (const char* add_op : {"torch.add", "operator.add"}) {
        configs.push_back(conv_add_config(with_bn, with_relu, add_op, side, dt));
      }
    }
  }
  const char* fused = with_relu ? "torch.ao.nn.intrinsic.ConvAddReLU2d" : "torch.ao.nn.intrinsic.ConvAdd2d";
  configs.push_back(op_config(fused, dt)
                        .set_root_module("torch.nn.Conv2d")
                        .set_reference_quantized_module("torch.ao.nn.quantized.reference.Conv2d"));
}

/// Linear followed by an elementwise op, as module or function, fused into `fused`.
void append_linear_eltwise_configs(PatternConfigs& configs, const std::string& post_module, const std::string& post_op,
                                   const std::string& fused, const DTypeConfigs& dt) {
  configs.push_back(fusion_config({"torch.nn.Linear", post_module}, fused, dt));
  configs.push_back(fusion_config({"torch.nn.Linear", post_op}, fused, dt));
  configs.push_back(op_config(fused, dt)
                        .set_root_module("torch.nn.Linear")
                        .set_reference_quantized_module("torch.ao.nn.quantized.reference.Linear"));
  for (const std::string& post : {post_module, post_op}) {
    configs.push_back(BackendPatternConfig()
                          .set_pattern({"torch.nn.functional.linear", post})
                          .set_observation_type(kDifferent)
                          .set_dtype_configs(dt));
  }
}

}  // namespace

BackendConfig get_onednn_backend_config() {
  const DTypeConfigs conv_dtypes = {weighted_op_int8()};
  PatternConfigs conv = conv_configs(conv_dtypes);
  append_conv_add_configs(conv, false, conv_dtypes);
  append_conv_add_configs(conv, true, conv_dtypes);

  const DTypeConfigs linear_dtypes = {weighted_op_int8(), default_dynamic_int8()};
  PatternConfigs linear = linear_configs(linear_dtypes);
  append_linear_eltwise_configs(linear, "torch.nn.LeakyReLU", "torch.nn.functional.leaky_relu",
                                "torch.ao.nn.intrinsic.LinearLeakyReLU", linear_dtypes);
  linear.push_back(BackendPatternConfig()
                       .set_pattern({"torch.nn.Linear", "torch.nn.BatchNorm1d", "torch.nn.LeakyReLU"})
                       .set_dtype_configs(linear_dtypes)
                       .set_fuser_method("_fuse_linear_bn_leaky_relu")
                       .set_fused_module("torch.ao.nn.intrinsic.LinearLeakyReLU"));
  append_linear_eltwise_configs(linear, "torch.nn.Tanh", "torch.tanh", "torch.ao.nn.intrinsic.LinearTanh",
                                linear_dtypes);

  const DTypeConfigs op_quint8 = {default_op_quint8()};
  BackendConfig config("onednn");
  config.set_backend_pattern_configs(conv)
      .set_backend_pattern_configs(linear)
      .set_backend_pattern_configs(binary_op_configs(op_quint8))
      .set_backend_pattern_config(cat_config(op_quint8))
      .set_backend_pattern_configs(default_op_configs(op_quint8))
      .set_backend_pattern_configs(fixed_qparams_op_configs(op_quint8))
      .set_backend_pattern_configs(share_qparams_op_configs(op_quint8))
      .set_backend_pattern_configs(bn_configs(op_quint8))
      .set_backend_pattern_configs(ln_configs({input_output_only_quint8()}))
      .set_backend_pattern_configs(rnn_op_configs({default_dynamic_int8()}))
      .set_backend_pattern_configs(embedding_op_configs({weight_only(c10::kQInt8)}));
  return config;
}

}  // namespace qfx::backend
