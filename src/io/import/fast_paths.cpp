// PyTorch's inference fast paths as the modules they stand for. Traced in
// eval mode under torch.no_grad(), an nn.TransformerEncoderLayer records one
// aten::_transformer_encoder_layer_fwd and an nn.MultiheadAttention one
// aten::_native_multi_head_attention: fused ops that carry every weight and
// setting of the module. The import gives the graph the slow path's trace
// gives: the layer's submodules called one by one (self-attention, dropouts,
// residual adds, LayerNorms, the feed-forward Linear layers), so static and
// dynamic quantization treat both traces alike. The self-attention stays
// whole and float, as FX keeps nn.MultiheadAttention: a TorchScript module
// computing F.multi_head_attention_forward's eval path op for op (PyTorch
// 1.13's), with the module's attributes (num_heads, batch_first) the ONNX
// export reads.

#include "script_reader.h"
#include "leaf_modules.h"

#include "qfx/io/script_define.h"
#include "qfx/ir/python_literals.h"
#include "qfx/nn/float_modules.h"
#include "qfx/nn/opaque_modules.h"

#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <torch/csrc/jit/ir/constants.h>

#include <cmath>

namespace qfx::io::detail {
namespace {

constexpr const char* kAttentionClass = "torch.nn.MultiheadAttention";

/// F.multi_head_attention_forward(x, x, x) in eval mode without masks or
/// weights, as PyTorch 1.13 computes it (batch first: transposed around it).
std::string attention_source(int64_t num_heads, int64_t head_dim, bool batch_first) {
  std::string h = std::to_string(num_heads), d = std::to_string(head_dim);
  std::string sqrt_d = ir::python_float_repr(std::sqrt(static_cast<double>(head_dim)));
  return std::string("def forward(self, x):\n") + (batch_first ? "    x = x.transpose(1, 0)\n" : "") +
         "    tgt_len = x.size(0)\n"
         "    bsz = x.size(1)\n"
         "    embed_dim = x.size(2)\n"
         "    qkv = torch.linear(x, self.in_proj_weight, self.in_proj_bias).chunk(3, -1)\n"
         "    q = qkv[0].contiguous().view(tgt_len, bsz * " +
         h + ", " + d +
         ").transpose(0, 1)\n"
         "    k = qkv[1].contiguous().view(qkv[1].size(0), bsz * " +
         h + ", " + d +
         ").transpose(0, 1)\n"
         "    v = qkv[2].contiguous().view(qkv[2].size(0), bsz * " +
         h + ", " + d +
         ").transpose(0, 1)\n"
         "    weights = torch.softmax(torch.bmm(q / " +
         sqrt_d +
         ", k.transpose(-2, -1)), -1)\n"
         "    out = torch.bmm(weights, v).transpose(0, 1).contiguous().view(tgt_len * bsz, embed_dim)\n"
         "    out = torch.linear(out, self.out_proj.weight, self.out_proj.bias)\n"
         "    out = out.view(tgt_len, bsz, out.size(1))\n" +
         (batch_first ? "    return out.transpose(1, 0)\n" : "    return out\n");
}

/// The weights and settings of a self-attention, as a fused op gives them.
struct Attention {
  int64_t embed_dim, num_heads;
  bool batch_first;
  at::Tensor qkv_weight, qkv_bias, proj_weight, proj_bias;
};

/// A whole, float nn.MultiheadAttention computing self-attention on one input.
std::shared_ptr<torch::nn::Module> attention_module(const Attention& a) {
  auto unit = std::make_shared<torch::jit::CompilationUnit>();
  torch::jit::Module out_proj(c10::QualifiedName("__torch__.torch.nn.modules.linear.NonDynamicallyQuantizableLinear"),
                              unit, /*shouldMangle=*/true);
  out_proj.register_parameter("weight", a.proj_weight, false);
  out_proj.register_parameter("bias", a.proj_bias, false);
  torch::jit::Module m(c10::QualifiedName("__torch__.torch.nn.modules.activation.MultiheadAttention"), unit, true);
  m.register_parameter("in_proj_weight", a.qkv_weight, false);
  m.register_parameter("in_proj_bias", a.qkv_bias, false);
  m.register_module("out_proj", out_proj);
  m.register_attribute("embed_dim", c10::IntType::get(), a.embed_dim);
  m.register_attribute("num_heads", c10::IntType::get(), a.num_heads);
  m.register_attribute("batch_first", c10::BoolType::get(), a.batch_first);
  define_method(m, attention_source(a.num_heads, a.embed_dim / a.num_heads, a.batch_first));
  m.eval();
  return std::make_shared<nn::ScriptModuleImpl>(m, kAttentionClass);
}

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
  Attention a{constant(1, "embed_dim").toInt(),
              constant(2, "num_heads").toInt(),
              true,
              tensor_input(inputs, 3, "qkv_weight"),
              tensor_input(inputs, 4, "qkv_bias"),
              tensor_input(inputs, 5, "proj_weight"),
              tensor_input(inputs, 6, "proj_bias")};
  bool gelu = constant(7, "use_gelu").toBool(), norm_first = constant(8, "norm_first").toBool();
  double eps = constant(9, "eps").toDouble();
  auto leaf = [&](const std::string& name, std::shared_ptr<torch::nn::Module> module, ir::Argument x) {
    b_.add_module(layer + "." + name, std::move(module));
    return b_.call_module(layer + "." + name, {std::move(x)});
  };
  auto norm = [&](int n, ir::Argument x) {
    size_t w = n == 1 ? 10 : 12;
    return leaf("norm" + std::to_string(n),
                layer_norm_module(a.embed_dim, eps, tensor_input(inputs, w, "norm weight"),
                                  tensor_input(inputs, w + 1, "norm bias")),
                std::move(x));
  };
  auto add = [&](ir::Argument x, ir::Argument y) { return b_.call(ir::Opcode::kCallFunction, "operator.add", {x, y}); };
  // x + dropout1(self_attn(x)), then x + dropout2(linear2(dropout(activation(linear1(x)))))
  auto self_attention = [&](ir::Argument x) {
    return leaf("dropout1", dropout_module(), leaf("self_attn", attention_module(a), std::move(x)));
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

std::shared_ptr<torch::nn::Module> ScriptReader::attention_fast_path(const torch::jit::Module& module,
                                                                     const torch::jit::Graph& forward) {
  const torch::jit::Node* op = nullptr;
  for (const torch::jit::Node* n : forward.nodes()) {
    if (n->kind() == c10::Symbol::fromQualString("aten::_native_multi_head_attention")) op = n;
  }
  if (op == nullptr) return nullptr;
  // _native_multi_head_attention(query, key, value, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight,
  //   proj_bias, mask, need_weights, average_attn_weights, mask_type)
  bool self_attention = op->input(0) == op->input(1) && op->input(1) == op->input(2);
  bool one_output = forward.outputs().size() == 1 && forward.outputs()[0]->type()->kind() == c10::TypeKind::TensorType;
  if (!self_attention || !one_output || forward.inputs().size() != 2) {
    walker_.fail("a traced MultiheadAttention on its fast path other than self-attention returning its output alone");
  }
  auto int_of = [&](size_t i) { return torch::jit::toIValue(op->input(i))->toInt(); };
  torch::jit::Module out_proj = module.attr("out_proj").toModule();
  Attention a{int_of(3),
              int_of(4),
              true,
              module.attr("in_proj_weight").toTensor(),
              module.attr("in_proj_bias").toTensor(),
              out_proj.attr("weight").toTensor(),
              out_proj.attr("bias").toTensor()};
  return attention_module(a);
}

}  // namespace qfx::io::detail
