// The native-style backends' common shape (native.py's op-family order).

#include "native_style.h"

namespace qfx::backend::detail {

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

}  // namespace qfx::backend::detail
