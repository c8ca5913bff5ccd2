// PyTorch 1.13's get_qnnpack_backend_config (backend_config/qnnpack.py): the
// native shape, each family first with XNNPACK's constrained qint8 configs.

#include "qfx/backend/builtin_backends.h"

#include "native_style.h"

#include <cmath>

namespace qfx::backend {
namespace {

using namespace detail;  // NOLINT: the dtype configs

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

BackendConfig get_qnnpack_backend_config() {
  static const BackendConfig config = native_style("qnnpack", qnnpack_dtypes());
  return config;
}

}  // namespace qfx::backend
