// PyTorch's inference fast paths as the modules they stand for. Traced in
// eval mode under torch.no_grad(), an nn.TransformerEncoderLayer records one
// aten::_transformer_encoder_layer_fwd and an nn.MultiheadAttention one
// aten::_native_multi_head_attention: fused ops that carry every weight and
// setting of the module. The import gives the graph the slow path's trace
// gives: the layer's submodules called one by one (self-attention, dropouts,
// residual adds, LayerNorms, the feed-forward Linear layers), so static and
// dynamic quantization treat both traces alike. The self-attention stays
// whole and float, as FX keeps nn.MultiheadAttention: an
// nn::MultiheadAttention on the slow path, as the trace of the slow path
// records it (attention_leaf.cpp reads a traced MultiheadAttention's own
// fast path).

#include "script_reader.h"
#include "leaf_modules.h"

#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <torch/csrc/jit/ir/constants.h>

#include <map>

namespace qfx::io::detail {
namespace {

std::shared_ptr<torch::nn::Module> linear_module(const at::Tensor& weight, const at::Tensor& bias) {
  torch::nn::Linear linear(torch::nn::LinearOptions(weight.size(1), weight.size(0)).bias(bias.defined()));
  assign(linear->weight, weight);
  if (bias.defined()) assign(linear->bias, bias);
  linear->eval();
  return linear.ptr();
}

std::shared_ptr<torch::nn::Module> layer_norm_module(int64_t features, double eps, const at::Tensor& weight,
                                                     const at::Tensor& bias) {
  torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({features}).eps(eps));
  assign(norm->weight, weight);
  assign(norm->bias, bias);
  norm->eval();
  return norm.ptr();
}

/// The fused op does not carry the dropouts' p, which eval mode ignores.
std::shared_ptr<torch::nn::Module> dropout_module() {
  torch::nn::Dropout dropout(torch::nn::DropoutOptions(0.0));
  dropout->eval();
  return dropout.ptr();
}

}  // namespace

at::Tensor ScriptReader::tensor_input(const std::vector<ImportValue>& inputs, size_t index, const char* what) {
  const ImportValue& v = inputs.at(index);
  if (v.kind == ImportValue::Kind::kAttr) return v.tensor;
  if (v.is_static() && v.constant.isTensor()) return v.constant.toTensor();
  if (v.is_static() && v.constant.isNone()) return {};
  walker_.fail(std::string("a fused op whose ") + what + " is computed, not a weight of the model");
}

ImportValue ScriptReader::encoder_layer_fast_path(const std::vector<ImportValue>& inputs) {
  // _transformer_encoder_layer_fwd(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias,
  //   use_gelu, norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2,
  //   ffn_weight_1, ffn_bias_1, ffn_weight_2, ffn_bias_2, mask, mask_type)
  auto constant = [&](size_t i, const char* what) -> const c10::IValue& {
    if (!inputs.at(i).is_static()) walker_.fail(std::string("a fused encoder layer whose ") + what + " is computed");
    return inputs[i].constant;
  };
  if (!constant(18, "mask").isNone()) walker_.fail("a fused encoder layer with a mask (trace it without one)");
  const std::string layer = b_.scope().module_path;
  int64_t embed_dim = constant(1, "embed_dim").toInt();
  // the self-attention as the trace of its slow path computes it: one input, batch first, the output alone
  auto attention_options = nn::MultiheadAttentionOptions(embed_dim, constant(2, "num_heads").toInt())
                               .bias(tensor_input(inputs, 4, "qkv_bias").defined())
                               .batch_first(true)
                               .fast_path(false)
                               .output_alone(true);
  const std::map<std::string, size_t> attention_inputs = {
      {"in_proj_weight", 3}, {"in_proj_bias", 4}, {"out_proj.weight", 5}, {"out_proj.bias", 6}};
  auto attention_tensor = [&](const std::string& name) {
    return tensor_input(inputs, attention_inputs.at(name), name.c_str());
  };
  bool gelu = constant(7, "use_gelu").toBool(), norm_first = constant(8, "norm_first").toBool();
  double eps = constant(9, "eps").toDouble();
  auto leaf = [&](const std::string& name, std::shared_ptr<torch::nn::Module> module, ir::Argument x) {
    b_.add_module(layer + "." + name, std::move(module));
    return b_.call_module(layer + "." + name, {std::move(x)});
  };
  auto norm = [&](int n, ir::Argument x) {
    size_t w = n == 1 ? 10 : 12;
    return leaf("norm" + std::to_string(n),
                layer_norm_module(embed_dim, eps, tensor_input(inputs, w, "norm weight"),
                                  tensor_input(inputs, w + 1, "norm bias")),
                std::move(x));
  };
  auto add = [&](ir::Argument x, ir::Argument y) { return b_.call(ir::Opcode::kCallFunction, "operator.add", {x, y}); };
  // x + dropout1(self_attn(x)), then x + dropout2(linear2(dropout(activation(linear1(x)))))
  auto self_attention = [&](ir::Argument x) {
    return leaf("dropout1", dropout_module(),
                leaf("self_attn", attention_leaf_of(attention_options, attention_tensor), std::move(x)));
  };
  auto feed_forward = [&](ir::Argument x) {
    ir::Node* h =
        leaf("linear1", linear_module(tensor_input(inputs, 14, "ffn weight"), tensor_input(inputs, 15, "ffn bias")),
             std::move(x));
    h = b_.call(ir::Opcode::kCallFunction, gelu ? "torch.nn.functional.gelu" : "torch.nn.functional.relu", {h});
    h = leaf("dropout", dropout_module(), h);
    h = leaf("linear2", linear_module(tensor_input(inputs, 16, "ffn weight"), tensor_input(inputs, 17, "ffn bias")), h);
    return leaf("dropout2", dropout_module(), h);
  };
  ir::Argument x = to_argument(inputs.at(0));
  if (norm_first) {
    ir::Node* y = add(x, self_attention(norm(1, x)));
    return ImportValue::of_node(add(y, feed_forward(norm(2, y))));
  }
  ir::Node* y = norm(1, add(x, self_attention(x)));
  return ImportValue::of_node(norm(2, add(y, feed_forward(y))));
}

}  // namespace qfx::io::detail
