// The lowering context: modules built ahead, swapped in, nodes erased, refusals.

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
  gm.retire(gm.get_submodule(target));
  gm.add_submodule(target, std::move(quantized));
}

void Lowering::erase(ir::Node* node) {
  erased_.insert(node);
  gm.graph().erase_node(node);
}

Decline Lowering::refuse(const ir::Node& node, std::string why) {
  refusals[&node] = why;
  return why;
}

namespace {

bool same_output(const std::optional<nn::OutputQParams>& a, const std::optional<nn::OutputQParams>& b) {
  if (!a || !b) return !a && !b;
  return a->scale == b->scale && a->zero_point == b->zero_point;
}

}  // namespace

Lowering::Built Lowering::build(const Build& b, const torch::nn::Module& source) {
  try {
    return {nn::quantized_from_reference(b.type, source, b.output), ""};
  } catch (const c10::Error& e) {
    return {nullptr, "cannot build " + b.type + ": " + e.what_without_backtrace()};
  }
}

std::shared_ptr<nn::QuantizedModuleImpl> Lowering::make_quantized(const ir::Node& node, const std::string& type,
                                                                  std::optional<nn::OutputQParams> output) {
  Build b{&node, type, std::move(output)};
  Built built;
  auto it = prebuilt_index_.find(&node);
  const Build* planned = it != prebuilt_index_.end() ? &builds_[it->second] : nullptr;
  if (planned != nullptr && planned->type == type && same_output(planned->output, b.output)) {
    built = prebuilt_->take(it->second);
    prebuilt_index_.erase(it);
  } else {
    built = build(b, *module(&node));
  }
  if (built.module == nullptr) refusals[&node] = built.error;
  return built.module;
}

void Lowering::prebuild(std::vector<Build> builds) {
  forget_prebuilt();
  builds_ = std::move(builds);
  for (size_t i = 0; i < builds_.size(); ++i) {
    sources_.push_back(module(builds_[i].node));
    prebuilt_index_[builds_[i].node] = i;
  }
  prebuilt_ = std::make_unique<JobResults<Built>>(options.jobs, builds_.size(),
                                                  [this](size_t i) { return build(builds_[i], *sources_[i]); });
}

void Lowering::forget_prebuilt() {
  prebuilt_.reset();  // the worker stops before what it reads goes
  prebuilt_index_.clear();
  sources_.clear();
  builds_.clear();
}

bool is_call(const ir::Node& node, ir::Opcode op, const char* target) {
  if (node.op() != op) return false;
  return op == ir::Opcode::kCallFunction ? function_name(node) == target : node.target() == target;
}

nn::OutputQParams output_qparams(const Lowering& l, const ir::Node& q) {
  at::Tensor scale = l.gm.get_attr(q.args().at(1).to_node()->target()).toTensor();
  at::Tensor zero_point = l.gm.get_attr(q.args().at(2).to_node()->target()).toTensor();
  return {scale.item<double>(), zero_point.item<int64_t>()};
}

std::string read_as_float(const ir::Node& ref, const ir::Node& q) {
  const ir::Node* between = q.args().at(0).is_node() && q.args()[0].to_node() != &ref ? q.args()[0].to_node() : nullptr;
  for (const ir::Node* user : ref.users()) {
    const ir::Node* reader = user == &q || user == between ? nullptr : user;
    if (user == between) {
      for (const ir::Node* next : between->users()) reader = next == &q ? reader : next;
    }
    if (reader != nullptr) return "%" + reader->name() + " reads its float value too";
  }
  return "";
}

}  // namespace qfx::passes::detail
