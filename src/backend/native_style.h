#pragma once
// The shape PyTorch 1.13's native, fbgemm, x86 and qnnpack backends share
// (backend_config/native.py, fbgemm.py, x86.py, qnnpack.py): the same op
// families in the same order, each with the backend's dtype configs.

#include "qfx/backend/backend_config.h"

#include "common_operator_configs.h"
#include "dtype_configs.h"

#include <string>

namespace qfx::backend::detail {

/// The dtype configs of each op family of a backend.
struct FamilyDTypes {
  DTypeConfigs conv, linear, binary_op, default_op, fixed_qparams_op, share_qparams_op, rnn_op, embedding_op;
  DTypeConfigs layer_norm;  ///< empty: the backend has no layer-norm configs
};

/// The configs of a native-style backend, in PyTorch's order.
BackendConfig native_style(const std::string& name, const FamilyDTypes& d);

/// fbgemm's dtypes, which native and x86 share.
FamilyDTypes fbgemm_dtypes();

}  // namespace qfx::backend::detail
