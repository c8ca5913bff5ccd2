// nn::register_builtins(): every nn file's registration, in one order.

#include "qfx/nn/builtins.h"

#include "module_kinds.h"

namespace qfx::nn {

void register_builtins() {
  register_linear_conv_kinds();
  register_pool_norm_kinds();
  register_activation_kinds();
  register_rnn_kinds();
  register_attention_kinds();
  register_opaque_kinds();
  register_fused_kinds();
  register_fuser_methods();
  register_qat_kinds();
  register_reference_kinds();
  register_quantized_kinds();
  register_quantized_rnn_kinds();
  register_lstm_kinds();
}

}  // namespace qfx::nn
