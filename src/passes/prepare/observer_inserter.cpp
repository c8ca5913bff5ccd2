// ObserverInserter: placing observer modules and nodes, as PyTorch 1.13's
// prepare does it, so that names and sharing come out the same.

#include "observer_inserter.h"

#include "qfx/ir/module_registry.h"
#include "qfx/passes/prepare_state.h"
#include "qfx/pattern/op_catalog.h"
#include "qfx/quant/observer_base.h"

namespace qfx::passes::detail {
namespace {

/// Functional ops whose weight argument is not quantized.
bool has_float_weight(const ir::Node& node) {
  if (node.op() != ir::Opcode::kCallFunction) return false;
  std::string name = pattern::canonical_op_name(node.target());
  return name == "torch.nn.functional.layer_norm" || name == "torch.nn.functional.group_norm" ||
         name == "torch.nn.functional.instance_norm";
}

bool same_node(const ir::Argument& a, const ir::Argument& b) {
  return a.is_node() && b.is_node() && a.to_node() == b.to_node();
}

/// From `arg`, the first node argument upwards until an observer; null if none.
ir::Node* observer_above(ir::Node* node, const ir::GraphModule& gm, bool first_arg_only) {
  for (int guard = 0; node != nullptr && guard < 10000; ++guard) {
    if (is_observer_node(*node, gm)) return node;
    if (node->op() == ir::Opcode::kPlaceholder && !first_arg_only) return nullptr;
    ir::Node* next = nullptr;
    for (const ir::Argument& arg : node->args()) {
      if (arg.is_node()) {
        next = arg.to_node();
        break;
      }
      if (first_arg_only) return nullptr;
    }
    node = next;
  }
  return nullptr;
}

}  // namespace

std::string ObserverInserter::next_observer_name() {
  std::string name;
  do {
    name = "activation_post_process_" + std::to_string(next_index_++);
  } while (gm_.find_submodule(name) != nullptr || gm_.has_attr(name));
  return name;
}

ir::Node* ObserverInserter::insert_after(ir::Node& value, const quant::ObserverSpec& spec) {
  std::shared_ptr<quant::ActivationPostProcess> observer = spec.make();
  std::string name = next_observer_name();
  observer->set_label(name);
  gm_.add_submodule(name, observer);
  auto guard = gm_.graph().inserting_after(&value);
  return gm_.graph().call_module(name, {ir::Argument(&value)});
}

TargetDtype ObserverInserter::output_dtype(const ir::Node& arg) const {
  const ir::Node* value = &arg;
  if (is_observer_node(arg, gm_)) value = arg.args().at(0).to_node();
  return dtypes_.at(value).output;
}

TargetDtype ObserverInserter::input_dtype(const ir::Node& node, const ir::Argument& arg) const {
  auto standalone = standalone_inputs_.find(&node);
  if (standalone != standalone_inputs_.end()) {  // PyTorch: quint8 at the listed positions
    for (int64_t i : standalone->second) {
      if (i < static_cast<int64_t>(node.args().size()) && same_node(node.args()[i], arg)) return c10::kQUInt8;
    }
    return c10::kFloat;
  }
  const DtypeInfo& info = dtypes_.at(&node);
  if (weight_args_.is_weight(node, arg)) return has_float_weight(node) ? std::nullopt : info.weight;
  if (weight_args_.is_bias(node, arg)) return info.bias;
  return info.input;
}

ir::Argument ObserverInserter::observe_arg(ir::Node& node, const ir::Argument& arg, const quant::QConfig& qconfig) {
  if (arg.has_items()) {
    ir::Argument::Items items;
    for (const ir::Argument& item : arg.items()) items.push_back(observe_arg(node, item, qconfig));
    return arg.kind() == ir::Argument::Kind::kTuple ? ir::Argument::tuple(std::move(items))
                                                    : ir::Argument::list(std::move(items));
  }
  if (!arg.is_node()) return arg;
  ir::Node* value = arg.to_node();
  bool is_weight = weight_args_.is_weight(node, arg);
  bool is_activation = !is_weight && !weight_args_.is_bias(node, arg);
  bool dynamic = is_activation && dtypes_.at(&node).input_is_dynamic && standalone_inputs_.count(&node) == 0;
  TargetDtype as_output = output_dtype(*value);
  TargetDtype as_input = input_dtype(node, arg);
  bool needs_observer = (!dynamic && as_output != as_input && as_input != c10::kFloat && !is_unobservable(as_output) &&
                         !quant::is_reuse_input_qconfig(qconfig)) ||
                        (dynamic && !node.args().empty() && same_node(arg, node.args()[0]));
  if (!needs_observer) return arg;

  const quant::ObserverSpec& spec = is_weight ? qconfig.weight : qconfig.activation;
  std::string type = ir::module_type_name(*spec.prototype());
  for (ir::Node* user : value->users()) {  // one observer per value and dtype
    if (user->op() != ir::Opcode::kCallModule || !is_observer_node(*user, gm_)) continue;
    auto existing = std::dynamic_pointer_cast<quant::ActivationPostProcess>(gm_.get_submodule(user->target()));
    if (ir::module_type_name(*existing) == type && as_input == existing->dtype()) return ir::Argument(user);
  }
  return ir::Argument(insert_after(*value, spec));
}

void ObserverInserter::observe_inputs(ir::Node& node, const quant::QConfig& qconfig) {
  std::vector<ir::Argument> args;
  for (const ir::Argument& arg : node.args()) args.push_back(observe_arg(node, arg, qconfig));
  ir::Kwargs kwargs;
  for (const auto& [key, arg] : node.kwargs()) kwargs.emplace_back(key, observe_arg(node, arg, qconfig));
  node.set_args(std::move(args));
  node.set_kwargs(std::move(kwargs));
}

bool ObserverInserter::share_input_observer(ir::Node& node) {
  const ir::Argument* first = nullptr;
  for (const ir::Argument& arg : node.args()) {
    if (arg.is_node() || arg.kind() == ir::Argument::Kind::kList || arg.kind() == ir::Argument::Kind::kTuple) {
      first = &arg;
      break;
    }
  }
  if (first == nullptr) return false;
  const ir::Argument& head = first->has_items() ? first->items().at(0) : *first;
  if (!head.is_node()) return false;
  ir::Node* source = observer_above(head.to_node(), gm_, false);
  if (source == nullptr) return false;
  std::shared_ptr<torch::nn::Module> shared = gm_.get_submodule(source->target());
  if (first->has_items()) {
    for (size_t i = 1; i < first->items().size(); ++i) {
      const ir::Argument& item = first->items()[i];
      ir::Node* observer = item.is_node() ? observer_above(item.to_node(), gm_, true) : nullptr;
      if (observer == nullptr) return false;
      gm_.add_submodule(observer->target(), shared);
    }
  }
  for (ir::Node* user : node.users()) {
    TORCH_INTERNAL_ASSERT(is_observer_node(*user, gm_), "share_input_observer: %", node.name(),
                          " has a user that is not its observer");
    gm_.add_submodule(user->target(), shared);
  }
  return true;
}

void ObserverInserter::remove_output_observers(ir::Node& node) {
  std::vector<ir::Node*> users = node.users();
  for (ir::Node* observer : users) {
    observer->replace_all_uses_with(&node);
    gm_.graph().erase_node(observer);
  }
}

}  // namespace qfx::passes::detail
