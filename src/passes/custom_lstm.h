#pragma once
// The custom module LSTM of PyTorch 1.13's FX flow (`_is_custom_module_lstm`,
// `_insert_dequant_stubs_for_custom_module_lstm_output`): a statically
// quantized torch.nn.LSTM swapped for torch.ao.nn.quantizable.LSTM takes
// quantized (input, (h_0, c_0)) and returns quantized (output, (h_n, c_n)),
// so prepare puts a DeQuantStub after each output instead of an output
// observer, and convert turns each stub into a dequantize. Internal to the
// passes.

#include "target_dtypes.h"

#include "qfx/ir/graph_module.h"
#include "qfx/quant/qconfig.h"

#include <unordered_map>

namespace qfx::passes::detail {

/// True when `module` is a torch.nn.LSTM statically quantized as a custom module.
bool is_custom_module_lstm(const torch::nn::Module& module, const quant::QConfig& qconfig);

/// After `lstm`: one `dequant_stub_N` call after each of `out`, `h` and `c`
/// (the getitem nodes that take them from the result), its users rerouted to
/// the stub; the stubs' output dtype is quint8, so their users observe no
/// input again. c10::Error naming the node when the result is used
/// otherwise than through those getitems.
void insert_lstm_dequant_stubs(ir::GraphModule& gm, ir::Node& lstm,
                               std::unordered_map<const ir::Node*, DtypeInfo>& dtypes);

/// True for a call of a DeQuantStub module.
bool is_dequant_stub(const ir::Node& node, const ir::GraphModule& gm);

}  // namespace qfx::passes::detail
