// The lowering context and the pattern helpers its steps share.

#include "lowering.h"

#include "lower_tables.h"
#include "qfx/ir/module_registry.h"
#include "qfx/passes/prepare_state.h"

#include <ATen/core/Tensor.h>

namespace qfx::passes::detail {

std::shared_ptr<torch::nn::Module> Lowering::module(const ir::Node* node) const {
  if (node == nullptr || node->op() != ir::Opcode::kCallModule) return nullptr;
  return gm.find_submodule(node->target());
}

void Lowering::swap_in(const std::string& target, std::shared_ptr<torch::nn::Module> quantized) {
  replaced_.push_back(gm.get_submodule(target));
  gm.add_submodule(target, std::move(quantized));
}

namespace {

bool same_output(const std::optional<nn::OutputQParams>& a, const std::optional<nn::OutputQParams>& b) {
  if (!a || !b) return !a && !b;
  return a->scale == b->scale && a->zero_point == b->zero_point;
}

// Builds b.module, or says why not in b.error.
void build(Lowering::Build& b, const torch::nn::Module& source) {
  try {
    b.module = nn::quantized_from_reference(b.type, source, b.output);
  } catch (const c10::Error& e) {
    b.error = "cannot build " + b.type + ": " + e.what_without_backtrace();
  }
}

}  // namespace

std::shared_ptr<nn::QuantizedModuleImpl> Lowering::make_quantized(const ir::Node& node, const std::string& type,
                                                                  std::optional<nn::OutputQParams> output) {
  Build b{&node, type, std::move(output), nullptr, "", {}};
  auto it = prebuilt_.find(&node);
  if (it != prebuilt_.end() && it->second.type == type && same_output(it->second.output, b.output)) {
    b = std::move(it->second);
    prebuilt_.erase(it);
    b.warnings.issue();
  } else {
    build(b, *module(&node));
  }
  if (b.module == nullptr) refusals[&node] = b.error;
  return b.module;
}

void Lowering::prebuild(std::vector<Build> builds) {
  std::vector<std::shared_ptr<torch::nn::Module>> sources;
  for (const Build& b : builds) sources.push_back(module(b.node));
  ir::detail::share(builds.size(), [&](size_t i) {
    builds[i].warnings.keep_during([&] { build(builds[i], *sources[i]); });
  });
  for (Build& b : builds) prebuilt_[b.node] = std::move(b);
}

bool is_call(const ir::Node& node, ir::Opcode op, const char* target) {
  if (node.op() != op) return false;
  return op == ir::Opcode::kCallFunction ? function_name(node) == target : node.target() == target;
}

bool is_dequantize(const ir::Argument& arg) {
  return arg.is_node() && is_call(*arg.to_node(), ir::Opcode::kCallMethod, "dequantize");
}

nn::OutputQParams output_qparams(const Lowering& l, const ir::Node& q) {
  at::Tensor scale = l.gm.get_attr(q.args().at(1).to_node()->target()).toTensor();
  at::Tensor zero_point = l.gm.get_attr(q.args().at(2).to_node()->target()).toTensor();
  return {scale.item<double>(), zero_point.item<int64_t>()};
}

namespace {

bool is_relu(const Lowering& l, const ir::Node& node) {
  if (node.op() == ir::Opcode::kCallFunction) {
    std::string f = function_name(node);
    return f == "torch.nn.functional.relu" || f == "torch.relu";
  }
  auto m = l.module(&node);
  return m != nullptr && ir::module_type_name(*m) == "torch.nn.ReLU";
}

}  // namespace

std::optional<StaticMatch> match_static(const Lowering& l, ir::Node* node,
                                        const std::function<bool(const ir::Node&)>& accept,
                                        const std::vector<size_t>& dequantize_indexes) {
  if (!is_call(*node, ir::Opcode::kCallFunction, "torch.quantize_per_tensor")) return std::nullopt;
  StaticMatch m;
  m.q = node;
  if (node->args().empty() || !node->args()[0].is_node()) return std::nullopt;
  m.ref = node->args()[0].to_node();
  if (is_relu(l, *m.ref)) {
    m.relu = m.ref;
    if (m.relu->args().empty() || !m.relu->args()[0].is_node()) return std::nullopt;
    m.ref = m.relu->args()[0].to_node();
  }
  if (node_has_none_qconfig(*m.ref) || !accept(*m.ref)) return std::nullopt;
  bool dequantized = false;
  for (size_t i : dequantize_indexes) {
    if (i >= m.ref->args().size()) return std::nullopt;
    const ir::Argument& arg = m.ref->args()[i];
    if (is_dequantize(arg)) {
      dequantized = true;
    } else if (arg.is_node()) {
      return std::nullopt;
    }
  }
  if (!dequantized) return std::nullopt;
  return m;
}

}  // namespace qfx::passes::detail
