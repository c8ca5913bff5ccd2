// nn.MultiheadAttention as the leaf it is (nn::MultiheadAttention, which
// computes PyTorch 1.13's forward), from the three forms a TorchScript file
// holds it in:
// - scripted: the module keeps its attributes (num_heads, batch_first, ...)
//   and its forward chooses the fast path at run time, as the leaf does;
// - traced on the slow path: a trace keeps no int attributes, so the head
//   count is the constant F.multi_head_attention_forward divides embed_dim
//   by (`embed_dim // num_heads`, a trunc division) and batch_first a
//   transpose of the query before anything else reads it; the leaf always
//   takes the slow path, as the trace does;
// - traced on the fast path (aten::_native_multi_head_attention, also
//   inside a fused encoder layer): the op's own arguments.
// A trace that records anything else (masks, bias_k, add_zero_attn, an
// unbatched query, dropout, a 2.x op) is not recognised and stays a
// TorchScript module, as before.

#include "script_reader.h"

#include "leaf_modules.h"

#include "qfx/nn/attention.h"

#include <torch/csrc/jit/ir/constants.h>

#include <set>

namespace qfx::io::detail {
namespace {

constexpr const char* kNativeAttention = "aten::_native_multi_head_attention";

at::Tensor tensor_attr(const torch::jit::Module& m, const std::string& name) {
  if (!m.hasattr(name)) return {};
  c10::IValue v = m.attr(name);
  return v.isTensor() ? v.toTensor() : at::Tensor();
}

/// A node of `graph` of this kind, or nullptr.
const torch::jit::Node* find_node(const torch::jit::Graph& graph, const char* kind) {
  for (const torch::jit::Node* n : graph.nodes()) {
    if (n->kind() == c10::Symbol::fromQualString(kind)) return n;
  }
  return nullptr;
}

bool returns_tensor(const torch::jit::Graph& forward) {
  return forward.outputs().size() == 1 && forward.outputs()[0]->type()->kind() == c10::TypeKind::TensorType;
}

/// The head count of a traced slow path (`embed_dim // num_heads`), or 0.
int64_t traced_head_count(const torch::jit::Graph& forward) {
  for (const torch::jit::Node* node : forward.nodes()) {
    if (node->kind() != c10::Symbol::fromQualString("aten::div") || node->inputs().size() != 3) continue;
    c10::optional<c10::IValue> divisor = torch::jit::toIValue(node->input(1));
    c10::optional<c10::IValue> mode = torch::jit::toIValue(node->input(2));
    if (divisor && divisor->isTensor() && mode && mode->isString() && mode->toStringRef() == "trunc") {
      return divisor->toTensor().item<int64_t>();
    }
  }
  return 0;
}

/// True when a traced forward holds an op of the slow path's optional parts
/// (masks, bias_k/v, add_zero_attn, unbatched input, dropout) or of
/// another version's forward.
bool traces_more_than_plain_attention(const torch::jit::Graph& forward) {
  static const std::set<std::string> kOthers = {
      "aten::baddbmm",    "aten::cat",     "aten::zeros",       "aten::unsqueeze",
      "aten::dropout",    "aten::squeeze", "aten::masked_fill", "aten::scaled_dot_product_attention",
      "aten::logical_or", kNativeAttention};
  for (const torch::jit::Node* n : forward.nodes()) {
    if (kOthers.count(n->kind().toQualString()) != 0) return true;
  }
  return false;
}

/// A module's tensor by Python path ("out_proj.weight").
at::Tensor tensor_at(const torch::jit::Module& m, const std::string& path) {
  size_t dot = path.find('.');
  if (dot == std::string::npos) return tensor_attr(m, path);
  return m.hasattr(path.substr(0, dot)) ? tensor_at(m.attr(path.substr(0, dot)).toModule(), path.substr(dot + 1))
                                        : at::Tensor();
}

/// The leaf with a module's tensors and training flag.
std::shared_ptr<torch::nn::Module> attention_module(const torch::jit::Module& m,
                                                    const nn::MultiheadAttentionOptions& options) {
  std::shared_ptr<torch::nn::Module> leaf =
      attention_leaf_of(options, [&](const std::string& name) { return tensor_at(m, name); });
  leaf->train(m.is_training());
  return leaf;
}

/// The options a module's tensors show: embed_dim, kdim, vdim, bias, bias_k.
nn::MultiheadAttentionOptions options_from_tensors(const torch::jit::Module& m, int64_t num_heads) {
  at::Tensor out_weight = tensor_attr(m.attr("out_proj").toModule(), "weight");
  nn::MultiheadAttentionOptions options(out_weight.size(0), num_heads);
  at::Tensor k = tensor_attr(m, "k_proj_weight"), v = tensor_attr(m, "v_proj_weight");
  if (!tensor_attr(m, "in_proj_weight").defined() && k.defined() && v.defined()) {
    options.kdim(k.size(1)).vdim(v.size(1));
  }
  return options.bias(tensor_attr(m, "in_proj_bias").defined()).add_bias_kv(tensor_attr(m, "bias_k").defined());
}

/// True when `block` or a block inside it calls the fast path's op.
bool calls_fast_path(const torch::jit::Block& block) {
  for (const torch::jit::Node* n : block.nodes()) {
    if (n->kind() == c10::Symbol::fromQualString(kNativeAttention)) return true;
    for (const torch::jit::Block* inner : n->blocks()) {
      if (calls_fast_path(*inner)) return true;
    }
  }
  return false;
}

/// A scripted module: its attributes, and 1.13's forward, with its fast path
/// where the forward has one (a file qfx wrote may not), returning the
/// output alone where the forward does.
std::shared_ptr<torch::nn::Module> scripted_attention(const torch::jit::Module& m, const torch::jit::Graph& forward) {
  nn::MultiheadAttentionOptions options = options_from_tensors(m, m.attr("num_heads").toInt());
  options.batch_first(m.hasattr("batch_first") && m.attr("batch_first").toBool())
      .dropout(m.hasattr("dropout") ? m.attr("dropout").toDouble() : 0.0)
      .add_zero_attn(m.hasattr("add_zero_attn") && m.attr("add_zero_attn").toBool())
      .fast_path(calls_fast_path(*forward.block()))
      .output_alone(returns_tensor(forward));
  return attention_module(m, options);
}

/// A trace of the slow path without its optional parts, returning the output
/// alone; nullptr for any other trace.
std::shared_ptr<torch::nn::Module> traced_attention(const torch::jit::Module& m, const torch::jit::Graph& forward) {
  int64_t num_heads = traced_head_count(forward);
  size_t inputs = forward.inputs().size();  // self, then query or query, key, value
  if (num_heads == 0 || !returns_tensor(forward) || (inputs != 2 && inputs != 4) ||
      traces_more_than_plain_attention(forward) || tensor_attr(m, "bias_k").defined()) {
    return nullptr;
  }
  const torch::jit::Value* query = forward.inputs().at(1);
  bool batch_first =
      !query->uses().empty() && query->uses()[0].user->kind() == c10::Symbol::fromQualString("aten::transpose");
  nn::MultiheadAttentionOptions options = options_from_tensors(m, num_heads);
  return attention_module(m, options.batch_first(batch_first).fast_path(false).output_alone(true));
}

}  // namespace

std::shared_ptr<torch::nn::Module> attention_leaf_of(const nn::MultiheadAttentionOptions& options,
                                                     const std::function<at::Tensor(const std::string&)>& tensor) {
  nn::MultiheadAttention attention(options);
  auto copy = [&](at::Tensor& target, const char* name) {
    at::Tensor source = tensor(name);
    TORCH_CHECK(source.defined(), "MultiheadAttention without its ", name);
    assign(target, source);
  };
  if (attention->packed()) {
    copy(attention->in_proj_weight, "in_proj_weight");
  } else {
    copy(attention->q_proj_weight, "q_proj_weight");
    copy(attention->k_proj_weight, "k_proj_weight");
    copy(attention->v_proj_weight, "v_proj_weight");
  }
  copy(attention->out_proj->weight, "out_proj.weight");
  if (options.bias()) {
    copy(attention->in_proj_bias, "in_proj_bias");
    copy(attention->out_proj->bias, "out_proj.bias");
  }
  if (options.add_bias_kv()) {
    copy(attention->bias_k, "bias_k");
    copy(attention->bias_v, "bias_v");
  }
  attention->eval();
  return attention.ptr();
}

std::shared_ptr<torch::nn::Module> scripted_attention_leaf(const torch::jit::Module& module) {
  return scripted_attention(module, *module.get_method("forward").graph());
}

std::shared_ptr<torch::nn::Module> ScriptReader::attention_leaf(const torch::jit::Module& module,
                                                                const torch::jit::Graph& forward) {
  if (module.hasattr("num_heads")) return scripted_attention(module, forward);
  const torch::jit::Node* op = find_node(forward, kNativeAttention);
  if (op == nullptr) return traced_attention(module, forward);
  // _native_multi_head_attention(query, key, value, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight,
  //   proj_bias, mask, need_weights, average_attn_weights, mask_type)
  bool self_attention = op->input(0) == op->input(1) && op->input(1) == op->input(2);
  if (!self_attention || !returns_tensor(forward) || forward.inputs().size() != 2) {
    walker_.fail("a traced MultiheadAttention on its fast path other than self-attention returning its output alone");
  }
  auto int_of = [&](size_t i) { return torch::jit::toIValue(op->input(i))->toInt(); };
  nn::MultiheadAttentionOptions options = options_from_tensors(module, int_of(4));
  TORCH_CHECK(options.embed_dim() == int_of(3), "a fused attention whose embed_dim is not its weights'");
  return attention_module(module, options.batch_first(true).fast_path(false).output_alone(true));
}

}  // namespace qfx::io::detail
