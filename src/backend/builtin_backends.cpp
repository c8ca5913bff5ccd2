// The built-in backends with PyTorch 1.13's definitions: native, fbgemm and
// x86 (one shape, different names), qnnpack (with XNNPACK's qint8
// constraints), tensorrt; and the table of built-ins by name.

#include "qfx/backend/builtin_backends.h"

#include "common_operator_configs.h"
#include "dtype_configs.h"

#include <c10/util/Exception.h>

#include <cmath>
#include <functional>

namespace qfx::backend {
namespace {

using namespace detail;  // NOLINT: the op-family builders and dtype configs

/// The dtype configs of each op family of a backend.
struct FamilyDTypes {
  DTypeConfigs conv, linear, binary_op, default_op, fixed_qparams_op, share_qparams_op, rnn_op, embedding_op;
  DTypeConfigs layer_norm;  ///< empty: the backend has no layer-norm configs
};

/// The configs of the native-style backends, in PyTorch's order.
BackendConfig native_style(const std::string& name, const FamilyDTypes& d) {
  BackendConfig config(name);
  config.set_backend_pattern_configs(conv_configs(d.conv))
      .set_backend_pattern_configs(linear_configs(d.linear))
      .set_backend_pattern_configs(binary_op_configs(d.binary_op))
      .set_backend_pattern_config(cat_config(d.default_op))
      .set_backend_pattern_configs(default_op_configs(d.default_op))
      .set_backend_pattern_configs(fixed_qparams_op_configs(d.fixed_qparams_op))
      .set_backend_pattern_configs(share_qparams_op_configs(d.share_qparams_op))
      .set_backend_pattern_configs(bn_configs(d.default_op));
  if (!d.layer_norm.empty()) config.set_backend_pattern_configs(ln_configs(d.layer_norm));
  config.set_backend_pattern_configs(rnn_op_configs(d.rnn_op))
      .set_backend_pattern_configs(embedding_op_configs(d.embedding_op));
  return config;
}

/// fbgemm's dtypes, which native and x86 share.
FamilyDTypes fbgemm_dtypes() {
  FamilyDTypes d;
  d.conv = {weighted_op_int8()};
  d.linear = {weighted_op_int8(), default_dynamic_int8(), default_dynamic_float16()};
  d.binary_op = {weighted_op_int8()};
  d.default_op = {default_op_quint8()};
  d.fixed_qparams_op = {weighted_op_int8()};
  d.share_qparams_op = {default_op_quint8()};
  d.rnn_op = {default_dynamic_int8(), default_dynamic_float16()};
  d.embedding_op = {weight_only(c10::kQUInt8), weight_only(c10::kQUInt4x2)};
  return d;
}

/// XNNPACK's qint8: activations with scale >= 2^-12, weights in [-127, 127].
FamilyDTypes qnnpack_dtypes() {
  DTypeWithConstraints act = c10::kQInt8;
  act.scale_min_lower_bound = std::ldexp(1.0, -12);
  DTypeWithConstraints weight = act;
  weight.quant_min_lower_bound = -127;
  weight.quant_max_upper_bound = 127;
  const DTypeConfig weighted_symmetric{act, act, weight, c10::kFloat};
  const DTypeConfig default_symmetric{act, act};
  FamilyDTypes d;
  d.conv = {weighted_symmetric, weighted_op_int8()};
  d.linear = {weighted_symmetric, weighted_op_int8(), default_dynamic_int8(), default_dynamic_float16()};
  d.binary_op = {weighted_symmetric, weighted_op_int8()};
  d.default_op = {default_symmetric, default_op_quint8()};
  d.fixed_qparams_op = {weighted_symmetric, weighted_op_int8()};
  d.share_qparams_op = {default_symmetric, default_op_quint8()};
  d.rnn_op = {default_dynamic_int8(), default_dynamic_float16()};
  d.embedding_op = {weight_only(c10::kQUInt8), weight_only(c10::kQUInt4x2)};
  return d;
}

}  // namespace

// The native-style configs are built once (a few hundred pattern configs);
// each call returns a copy the caller may change.

BackendConfig get_native_backend_config() {
  static const BackendConfig config = [] {
    FamilyDTypes d = fbgemm_dtypes();
    d.layer_norm = {input_output_only_quint8()};
    return native_style("native", d);
  }();
  return config;
}

BackendConfig get_fbgemm_backend_config() {
  static const BackendConfig config = native_style("fbgemm", fbgemm_dtypes());
  return config;
}

BackendConfig get_x86_backend_config() {
  static const BackendConfig config = native_style("x86", fbgemm_dtypes());
  return config;
}

BackendConfig get_qnnpack_backend_config() {
  static const BackendConfig config = native_style("qnnpack", qnnpack_dtypes());
  return config;
}

BackendConfig get_tensorrt_backend_config() {
  const DTypeConfigs weighted = {{c10::kQInt8, c10::kQInt8, c10::kQInt8, c10::kFloat}};
  const DTypeConfigs non_weighted = {{c10::kQInt8, c10::kQInt8}};
  BackendConfig config("tensorrt");
  config.set_backend_pattern_configs(conv_configs(weighted))
      .set_backend_pattern_config(
          op_config("torch.addmm", weighted)._set_input_type_to_index({{"bias", 0}, {"input", 1}, {"weight", 2}}))
      .set_backend_pattern_config(cat_config(non_weighted))
      .set_backend_pattern_configs(linear_configs(weighted))
      .set_backend_pattern_configs(binary_op_configs(weighted))
      .set_backend_pattern_configs(share_qparams_op_configs(non_weighted));
  return config;
}

namespace {

using BackendMaker = BackendConfig (*)();

const std::vector<std::pair<std::string, BackendMaker>>& builtins() {
  static const std::vector<std::pair<std::string, BackendMaker>> kBuiltins = {
      {"native", get_native_backend_config},     {"fbgemm", get_fbgemm_backend_config},
      {"qnnpack", get_qnnpack_backend_config},   {"x86", get_x86_backend_config},
      {"onednn", get_onednn_backend_config},     {"executorch", get_executorch_backend_config},
      {"tensorrt", get_tensorrt_backend_config},
  };
  return kBuiltins;
}

}  // namespace

std::vector<std::string> builtin_backend_names() {
  std::vector<std::string> names;
  for (const auto& builtin : builtins()) names.push_back(builtin.first);
  return names;
}

BackendConfig get_backend_config(const std::string& name) {
  for (const auto& [builtin, make] : builtins()) {
    if (name == builtin) return make();
  }
  std::string known;
  for (const std::string& n : builtin_backend_names()) known += (known.empty() ? "" : ", ") + n;
  TORCH_CHECK(false, "unknown backend \"", name, "\" (built-in: ", known, "; or a JSON file)");
}

}  // namespace qfx::backend
