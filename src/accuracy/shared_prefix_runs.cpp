// Shared prefixes: structural match of two converted graphs, value check on
// the first batch, then resumed runs.

#include "shared_prefix_runs.h"

#include "qfx/ir/graph_module.h"
#include "qfx/ir/interpreter.h"
#include "qfx/ir/module_registry.h"
#include "qfx/ir/printer.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <string>
#include <unordered_map>

namespace qfx::detail {
namespace {

// What a node computes, in words: name, op, target, arguments, module type.
std::string computation(const ir::GraphModule& gm, const ir::Node& node) {
  std::string text = node.name() + " " + ir::opcode_name(node.op()) + " " + node.target();
  for (const ir::Argument& arg : node.args()) text += " " + ir::format_argument(arg);
  for (const auto& [key, value] : node.kwargs()) text += " " + key + "=" + ir::format_argument(value);
  if (node.op() == ir::Opcode::kCallModule) text += " " + ir::module_type_name(*gm.get_submodule(node.target()));
  return text;
}

// How many leading nodes two graphs compute alike.
size_t structural_prefix(const ir::GraphModule& a, const ir::GraphModule& b) {
  auto na = a.graph().nodes();
  auto nb = b.graph().nodes();
  auto ia = na.begin();
  auto ib = nb.begin();
  size_t count = 0;
  for (; ia != na.end() && ib != nb.end(); ++ia, ++ib, ++count) {
    if ((*ia)->op() == ir::Opcode::kOutput || computation(a, **ia) != computation(b, **ib)) break;
  }
  return count;
}

bool same_tensor(const at::Tensor& a, const at::Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes() || a.is_quantized() != b.is_quantized()) {
    return false;
  }
  if (!a.is_quantized()) return at::equal(a, b);
  if (a.qscheme() != b.qscheme()) return false;
  if (a.qscheme() == at::kPerTensorAffine) {
    if (a.q_scale() != b.q_scale() || a.q_zero_point() != b.q_zero_point()) return false;
  } else if (a.q_per_channel_axis() != b.q_per_channel_axis() ||
             !at::equal(a.q_per_channel_scales(), b.q_per_channel_scales()) ||
             !at::equal(a.q_per_channel_zero_points(), b.q_per_channel_zero_points())) {
    return false;
  }
  return at::equal(a.int_repr(), b.int_repr());
}

// Equal values; objects other than tensors, containers and plain constants
// count as different (they may hold different state).
bool same_value(const c10::IValue& a, const c10::IValue& b) {
  if (a.tagKind() != b.tagKind()) return false;
  if (a.isTensor()) return same_tensor(a.toTensor(), b.toTensor());
  if (a.isTuple() || a.isList()) {
    std::vector<c10::IValue> ia = a.isTuple() ? a.toTupleRef().elements().vec() : a.toListRef().vec();
    std::vector<c10::IValue> ib = b.isTuple() ? b.toTupleRef().elements().vec() : b.toListRef().vec();
    if (ia.size() != ib.size()) return false;
    for (size_t i = 0; i < ia.size(); ++i) {
      if (!same_value(ia[i], ib[i])) return false;
    }
    return true;
  }
  if (a.isNone()) return true;
  if (a.isInt() || a.isDouble() || a.isBool() || a.isString()) return a == b;
  return a.isSameIdentity(b);
}

}  // namespace

struct SharedPrefixRuns::Model {
  const ir::GraphModule* gm = nullptr;
  std::unique_ptr<ir::Interpreter> interpreter;
  size_t base = 0;
  size_t shared = 0;  // leading nodes taken from the base; 0: run in full
};

SharedPrefixRuns::SharedPrefixRuns(const std::vector<const ir::GraphModule*>& bases,
                                   const std::vector<const ir::GraphModule*>& models) {
  for (const ir::GraphModule* base : bases) {
    bases_.push_back({base, std::make_unique<ir::Interpreter>(*base), {}});
    bases_.back().keep.assign(base->graph().size(), true);  // the first batch checks every value
  }
  for (const ir::GraphModule* gm : models) {
    Model model{gm, std::make_unique<ir::Interpreter>(*gm), 0, 0};
    for (size_t b = 0; b < bases.size(); ++b) {
      size_t shared = structural_prefix(*bases[b], *gm);
      if (shared > model.shared) {
        model.base = b;
        model.shared = shared;
      }
    }
    const bool in_place = model.interpreter->changes_in_place_from(model.shared) ||
                          (!bases_.empty() && bases_[model.base].interpreter->changes_in_place_from(model.shared));
    if (in_place || model.shared < model.interpreter->num_inputs()) model.shared = 0;
    models_.push_back(std::move(model));
  }
}

SharedPrefixRuns::~SharedPrefixRuns() = default;

// The first batch: the model in full, its prefix cut at the first value that
// differs from its base's.
c10::IValue SharedPrefixRuns::run_checking(Model& model, const std::vector<c10::IValue>& inputs,
                                           const std::vector<c10::IValue>& base_values) {
  size_t position = 0;
  size_t same = model.shared;
  model.interpreter->set_node_hook([&](const ir::Node&, const c10::IValue& value) {
    if (position < same && !same_value(base_values[position], value)) same = position;
    ++position;
  });
  std::vector<c10::IValue> none;
  c10::IValue output = model.interpreter->run_recording(inputs, {}, none);
  model.interpreter->set_node_hook(nullptr);
  model.shared = same < model.interpreter->num_inputs() ? 0 : same;
  return output;
}

// After the first batch, a base keeps only the values its models read: those
// of nodes before a model's prefix end that a node after it uses.
void SharedPrefixRuns::keep_only_what_models_read() {
  for (Base& base : bases_) std::fill(base.keep.begin(), base.keep.end(), false);
  for (const Model& model : models_) {
    if (model.shared == 0) continue;
    std::unordered_map<const ir::Node*, size_t> position;
    for (const ir::Node* node : model.gm->graph().nodes()) {
      const size_t here = position.size();
      position[node] = here;
      if (here < model.shared) continue;
      for (const ir::Node* input : node->input_nodes()) {
        if (position.at(input) < model.shared) bases_[model.base].keep[position.at(input)] = true;
      }
    }
  }
}

std::vector<c10::IValue> SharedPrefixRuns::run(const std::vector<c10::IValue>& inputs) {
  std::vector<std::vector<c10::IValue>> base_values(bases_.size());
  for (size_t b = 0; b < bases_.size(); ++b) {
    auto uses = [b](const Model& m) { return m.shared > 0 && m.base == b; };
    if (std::any_of(models_.begin(), models_.end(), uses)) {
      bases_[b].interpreter->run_recording(inputs, bases_[b].keep, base_values[b]);
    }
  }
  std::vector<c10::IValue> outputs;
  for (Model& model : models_) {
    if (model.shared == 0) {
      outputs.push_back(model.interpreter->run(inputs));
    } else if (!checked_) {
      outputs.push_back(run_checking(model, inputs, base_values[model.base]));
    } else {
      outputs.push_back(model.interpreter->run_from(model.shared, base_values[model.base]));
    }
  }
  if (!checked_) keep_only_what_models_read();
  checked_ = true;
  return outputs;
}

double SharedPrefixRuns::shared_fraction() const {
  size_t shared = 0;
  size_t nodes = 0;
  for (const Model& model : models_) {
    shared += model.shared;
    nodes += model.gm->graph().size();
  }
  return nodes == 0 ? 0.0 : static_cast<double>(shared) / static_cast<double>(nodes);
}

}  // namespace qfx::detail
