// convert-to-reference: PyTorch 1.13's convert with is_reference=True
// (fx/convert.py) on a prepared graph.
//
//   observer on x          =>  get_attr scale, get_attr zero_point,
//                              quantize_per_tensor(x, ...) -> dequantize
//   (dynamic: quantize_per_tensor_dynamic; float16: x.to(torch.float16);
//    observers whose producers and consumers all have no qconfig: removed)
//   observed Linear/Conv   =>  reference module with the weight observer's qparams
//
// Then dead code goes and the module tree is rebuilt without observers.

#include "qfx/ir/graph_module.h"
#include "qfx/ir/op_names.h"
#include "qfx/ir/module_registry.h"
#include "qfx/nn/intrinsic.h"
#include "qfx/nn/opaque_modules.h"
#include "qfx/nn/qat.h"
#include "qfx/nn/quantizable_lstm.h"
#include "qfx/nn/quantized_rnn.h"
#include "qfx/nn/reference.h"
#include "qfx/passes/pass.h"
#include "qfx/passes/pass_jobs.h"
#include "qfx/passes/pass_manager.h"
#include "qfx/passes/prepare_state.h"
#include "qfx/quant/simple_observers.h"
#include "passes/attr_names.h"
#include "passes/backend_support.h"
#include "passes/custom_lstm.h"
#include "passes/custom_module_swap.h"
#include "passes/qdq_edits.h"
#include "passes/quant_matches.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>

#include <unordered_map>
#include <unordered_set>

namespace qfx::passes {
namespace {

using detail::AttrNamer;
using detail::scope_of;
using quant::ActivationPostProcess;

std::shared_ptr<ActivationPostProcess> observer_at(const ir::GraphModule& gm, const ir::Node& node) {
  return std::dynamic_pointer_cast<ActivationPostProcess>(gm.get_submodule(node.target()));
}

bool has_none_qconfig(const ir::Argument& arg) { return arg.is_node() && node_has_none_qconfig(*arg.to_node()); }

/// PyTorch's get_module_path_and_prefix: where the qparams attributes are
/// named from (`linear_input_scale_0` for the input of linear).
std::string attr_prefix(const ir::Node& observer) {
  const ir::Node* observed = observer.args().at(0).to_node();
  bool input_only = node_has_none_qconfig(*observed);
  if (!input_only) return scope_of(observed);
  const ir::Node* user = observer.users().empty() ? nullptr : observer.users()[0];
  for (const ir::Node* n : observer.users()) {
    if (n->op() == ir::Opcode::kCallFunction && pattern::canonical_op_name(n->target()) == ir::op::kFunctionalLinear) {
      user = n;
      break;
    }
  }
  return scope_of(user) + "_input";
}

/// Whether convert turns `obs` into quantize_per_tensor / _per_channel with
/// its calculate_qparams (a quint8 / qint8 observer, not a placeholder).
bool is_static_int8(const ActivationPostProcess& obs) {
  c10::ScalarType dtype = obs.dtype();
  return (dtype == c10::kQUInt8 || dtype == c10::kQInt8) &&
         dynamic_cast<const quant::PlaceholderObserverImpl*>(&obs) == nullptr;
}

/// The quantize node an observer becomes, inserted before it; null when the
/// observer has no quantized form.
ir::Node* quantize_node(ir::GraphModule& gm, AttrNamer& attrs, ir::Node& observer, ActivationPostProcess& obs) {
  ir::Argument input = observer.args().at(0);
  c10::ScalarType dtype = obs.dtype();
  if (is_static_int8(obs)) {
    std::string prefix = attr_prefix(observer);
    quant::QParams q = obs.calculate_qparams();
    if (quant::is_per_channel(obs.qscheme())) {
      ir::Node* scale = attrs.add(prefix + "_scale_", q.scale);
      ir::Node* zero_point = attrs.add(prefix + "_zero_point_", q.zero_point);
      return gm.graph().call_function(ir::op::kQuantizePerChannel,
                                      {input, scale, zero_point, obs.ch_axis(), ir::Argument(dtype)});
    }
    ir::Node* scale = attrs.add(prefix + "_scale_", at::scalar_tensor(q.scale.item<float>(), at::kFloat));
    ir::Node* zero_point =
        attrs.add(prefix + "_zero_point_", at::scalar_tensor(q.zero_point.item<int64_t>(), at::kLong));
    return gm.graph().call_function(ir::op::kQuantizePerTensor, {input, scale, zero_point, ir::Argument(dtype)});
  }
  c10::optional<c10::ScalarType> compute = obs.compute_dtype();
  if (compute && (*compute == c10::kQUInt8 || *compute == c10::kQInt8 || *compute == c10::kHalf)) {
    at::QEngine engine = at::globalContext().qEngine();
    bool reduce_range = engine == at::QEngine::FBGEMM || engine == at::QEngine::X86;
    return gm.graph().call_function(ir::op::kQuantizePerTensorDynamic, {input, ir::Argument(*compute), reduce_range});
  }
  if (dtype == c10::kHalf) return gm.graph().call_method(ir::op::kTo, {input, ir::Argument(c10::kHalf)});
  return nullptr;
}

/// Nodes of statically quantized custom modules: their outputs are quantized already.
using QuantizedOutputs = std::unordered_set<const ir::Node*>;

void convert_observer(ir::GraphModule& gm, AttrNamer& attrs, ir::Node& observer, const QuantizedOutputs& quantized) {
  if (quantized.count(observer.args().at(0).to_node()) > 0) {
    detail::replace_with_dequantize(gm.graph(), observer);
    return;
  }
  std::shared_ptr<ActivationPostProcess> obs = observer_at(gm, observer);
  bool all_float = has_none_qconfig(observer.args().at(0));
  for (const ir::Node* user : observer.users())
    all_float = all_float && has_none_qconfig(ir::Argument(const_cast<ir::Node*>(user)));
  ir::Node* replacement = observer.args().at(0).to_node();
  if (!all_float) {
    auto guard = gm.graph().inserting_before(&observer);
    if (ir::Node* quantized = quantize_node(gm, attrs, observer, *obs)) {
      replacement = gm.graph().call_method(ir::op::kDequantize, {quantized});
    }
  }
  observer.replace_all_uses_with(replacement);
  gm.graph().erase_node(&observer);
}

bool weight_is_quantized(const quant::QConfig& qconfig) {
  c10::ScalarType w = quant::qconfig_dtypes(qconfig).weight;
  return w == c10::kQUInt8 || w == c10::kQInt8 || w == c10::kHalf || w == c10::kQUInt4x2;
}

/// What convert does to a weighted module's node, worked out beside the
/// rewrite: a QAT module's float module (batch norm folded in) goes to the
/// node's path, and the reference module replaces the module (or the first
/// part of a fused one). Computing it reads the module only.
struct WeightedConversion {
  std::shared_ptr<torch::nn::Module> float_module;  // from a QAT module, else null
  std::shared_ptr<torch::nn::Module> reference;     // null when the module stays float
};

/// What a weighted module node's conversion reads of the graph, read before
/// the rewrite changes it.
struct WeightedInput {
  std::shared_ptr<torch::nn::Module> module;
  const quant::QConfigAny* qconfig;  // the node's, kept in its meta
  bool observed;
};

WeightedInput weighted_input(const ir::GraphModule& gm, const ir::Node& node) {
  return {gm.get_submodule(node.target()), &node_qconfig(node), node_is_observed(node)};
}

WeightedConversion weighted_conversion(const WeightedInput& input, const backend::BackendConfig& backend) {
  WeightedConversion conversion;
  std::shared_ptr<torch::nn::Module> module = input.module;
  std::shared_ptr<ActivationPostProcess> weight_observer;
  if (auto qat = std::dynamic_pointer_cast<nn::QatModuleImpl>(module)) {
    // trained weight fake-quant, float module (batch norm folded in)
    weight_observer = std::dynamic_pointer_cast<ActivationPostProcess>(qat->named_children()["weight_fake_quant"]);
    module = qat->to_float();
    conversion.float_module = module;
  }
  const quant::QConfigAny& qconfig = *input.qconfig;
  if (!qconfig || !input.observed || !weight_is_quantized(*qconfig)) return conversion;
  const backend::BackendPatternConfig* config = backend.module_config(ir::module_type_name(*module));
  if (!config || !detail::supported_by_dtype_configs(*qconfig, config->dtype_configs())) return conversion;
  if (nn::has_reference_rnn(ir::module_type_name(*module))) {  // one observer per weight
    conversion.reference = nn::reference_rnn_from_float(module, qconfig->weight);
    return conversion;
  }
  auto fused = std::dynamic_pointer_cast<nn::FusedModuleImpl>(module);
  std::shared_ptr<torch::nn::Module> float_module = fused ? fused->module(0) : module;
  if (!weight_observer) weight_observer = qconfig->weight.make();
  weight_observer->forward(float_module->named_parameters(false)["weight"]);
  conversion.reference = nn::reference_from_float(float_module, nn::weight_qparams_of(*weight_observer));
  return conversion;
}

/// The weighted module nodes' conversions, as jobs (pass_jobs.h) the
/// rewrite takes when it reaches each node.
class WeightedConversions {
 public:
  WeightedConversions(const ir::GraphModule& gm, const std::vector<const ir::Node*>& nodes,
                      const backend::BackendConfig& backend, JobRunner* jobs)
      : backend_(backend),
        inputs_(weighted_inputs(gm, nodes, index_)),
        conversions_(jobs, inputs_.size(), [this](size_t i) { return weighted_conversion(inputs_[i], backend_); }) {}
  /// The conversion of `node`: worked out beside, else now; an error names the node.
  WeightedConversion of(const ir::GraphModule& gm, const ir::Node& node) {
    try {
      auto it = index_.find(&node);
      if (it == index_.end()) return weighted_conversion(weighted_input(gm, node), backend_);
      return conversions_.take(it->second);
    } catch (const c10::Error& e) {
      TORCH_CHECK(false, "%", node.name(), " (", ir::module_type_name(*gm.get_submodule(node.target())),
                  "): ", e.what_without_backtrace());
    }
  }

 private:
  const backend::BackendConfig& backend_;
  std::unordered_map<const ir::Node*, size_t> index_;  // before inputs_, which fill it
  std::vector<WeightedInput> inputs_;
  JobResults<WeightedConversion> conversions_;  // last: stopped first

  static std::vector<WeightedInput> weighted_inputs(const ir::GraphModule& gm,
                                                    const std::vector<const ir::Node*>& nodes,
                                                    std::unordered_map<const ir::Node*, size_t>& index) {
    std::vector<WeightedInput> inputs;
    for (const ir::Node* node : nodes) {
      index[node] = inputs.size();
      inputs.push_back(weighted_input(gm, *node));
    }
    return inputs;
  }
};

void convert_weighted_module(ir::GraphModule& gm, const ir::Node& node, const WeightedConversion& conversion) {
  std::shared_ptr<torch::nn::Module> module = gm.get_submodule(node.target());
  if (conversion.float_module) {
    module = conversion.float_module;
    gm.add_submodule(node.target(), module);
  }
  if (!conversion.reference) return;
  if (auto fused = std::dynamic_pointer_cast<nn::FusedModuleImpl>(module)) {
    fused->set_module(0, conversion.reference);
  } else {
    gm.add_submodule(node.target(), conversion.reference);
  }
}

/// Module types convert swaps for reference modules: root modules, and fused
/// modules whose first part is one.
bool is_weighted_module(const backend::BackendConfig& backend, const torch::nn::Module& module) {
  if (dynamic_cast<const nn::QatModuleImpl*>(&module) != nullptr) return true;
  auto* fused = dynamic_cast<const nn::FusedModuleImpl*>(&module);
  std::string type = ir::module_type_name(fused ? *fused->module(0) : module);
  for (const backend::BackendPatternConfig& config : backend.configs()) {
    if (config.root_module() == type && !config.reference_quantized_module().empty()) return true;
  }
  return false;
}

/// The call_module nodes the rewrite will convert as weighted modules, the
/// first call of each module only (a QAT module's weight observer sees its
/// weight once at a time).
std::vector<const ir::Node*> weighted_module_nodes(const ir::GraphModule& gm, const backend::BackendConfig& backend,
                                                   const CustomModuleMapping& custom_classes) {
  std::vector<const ir::Node*> nodes;
  std::unordered_set<const torch::nn::Module*> seen;
  for (const ir::Node* node : gm.graph().nodes()) {
    if (node->op() != ir::Opcode::kCallModule || is_observer_node(*node, gm)) continue;
    std::shared_ptr<torch::nn::Module> module = gm.get_submodule(node->target());
    if (!seen.insert(module.get()).second || detail::custom_module_at(*node, gm, custom_classes) ||
        dynamic_cast<nn::NestedGraphModuleImpl*>(module.get()) != nullptr || !is_weighted_module(backend, *module)) {
      continue;
    }
    nodes.push_back(node);
  }
  return nodes;
}

/// output_quantized_indexes: the listed outputs stay quantized.
void keep_outputs_quantized(ir::Graph& graph, const std::vector<int64_t>& indexes) {
  if (indexes.empty()) return;
  ir::Node* output = graph.output_node();
  ir::Argument result = output->args().at(0);
  if (result.kind() == ir::Argument::Kind::kList || result.kind() == ir::Argument::Kind::kTuple) {
    for (int64_t i : indexes) {
      TORCH_CHECK(i >= 0 && static_cast<size_t>(i) < result.items().size(), "output_quantized_indexes: output ", i,
                  " does not exist (the model returns ", result.items().size(), " values)");
      detail::bypass_dequantize(graph, *output, result.items()[i]);
    }
  } else if (std::find(indexes.begin(), indexes.end(), 0) != indexes.end()) {
    detail::bypass_dequantize(graph, *output, result);
  }
}

/// PyTorch's convert_standalone_module: the inputs the module takes quantized
/// skip their dequantize, a quantized output gets one, and the module is
/// converted on its own (with the parent's backend config, as PyTorch).
void convert_standalone(ir::GraphModule& gm, ir::Node& node, nn::NestedGraphModuleImpl& sm,
                        const ConvertToReferenceOptions& options) {
  for (int64_t i : sm.input_quantized_indexes) {
    if (i < static_cast<int64_t>(node.args().size()) && node.args()[i].is_node()) {
      detail::bypass_dequantize(gm.graph(), node, ir::Argument(node.args()[i]));
    }
  }
  if (!sm.output_quantized_indexes.empty()) detail::insert_dequantize_after(gm.graph(), node);
  PassOptions inner;
  inner.backend_config = options.backend_config;
  inner.input_quantized_indexes = sm.input_quantized_indexes;
  inner.output_quantized_indexes = sm.output_quantized_indexes;
  PassManager().add("convert-to-reference").run(sm.graph_module(), inner);
}

/// PyTorch's convert_custom_module: a statically quantized custom module
/// takes its inputs quantized (their dequantize nodes go) and is swapped
/// for its quantized class (from_observed, with its output observer; a
/// custom module LSTM has DeQuantStubs after its outputs instead).
void convert_custom_module(ir::GraphModule& gm, ir::Node& node, const torch::nn::Module& observed,
                           const CustomModuleMapping& mapping, QuantizedOutputs& quantized) {
  const quant::QConfigAny& qconfig = node_qconfig(node);
  TORCH_CHECK(qconfig, "convert: custom module %", node.name(), " has no qconfig (was it prepared?)");
  if (quant::activation_is_statically_quantized(*qconfig)) {
    quantized.insert(&node);
    for (const ir::Argument& arg : std::vector<ir::Argument>(node.args()))
      detail::bypass_dequantize(gm.graph(), node, arg);
  }
  ActivationPostProcess* output_observer = nullptr;
  for (ir::Node* user : node.users()) {
    if (is_observer_node(*user, gm)) output_observer = observer_at(gm, *user).get();
  }
  bool lstm = dynamic_cast<const nn::QuantizableLSTMImpl*>(&observed) != nullptr;
  TORCH_CHECK(output_observer != nullptr || lstm, "convert: custom module %", node.name(), " has no output observer");
  const nn::CustomModuleClass& target = detail::swapped_class(node, observed, mapping, *qconfig);
  TORCH_CHECK(target.from_observed, "%", node.name(), ": custom module class '", target.name, "' has no from_observed");
  gm.add_submodule(node.target(), target.from_observed(observed, output_observer));
}

/// convert's rewrite of each node, in graph order, the weighted modules'
/// conversions done as jobs.
void convert_nodes(ir::GraphModule& gm, const ConvertToReferenceOptions& options,
                   const CustomModuleMapping& custom_classes) {
  const backend::BackendConfig& backend = options.backend();
  AttrNamer attrs(gm);
  QuantizedOutputs quantized_outputs;
  WeightedConversions weighted(gm, weighted_module_nodes(gm, backend, custom_classes), backend, options.jobs);
  int64_t placeholders = 0;
  for (ir::Node* node : gm.graph().node_list()) {
    if (node->op() == ir::Opcode::kPlaceholder) {
      const auto& quantized = options.input_quantized_indexes;
      if (std::find(quantized.begin(), quantized.end(), placeholders++) == quantized.end()) continue;
      detail::insert_dequantize_after(gm.graph(), *node);
    } else if (node->op() == ir::Opcode::kCallModule) {
      if (is_observer_node(*node, gm)) {
        convert_observer(gm, attrs, *node, quantized_outputs);
      } else if (detail::is_dequant_stub(*node, gm)) {
        detail::replace_with_dequantize(gm.graph(), *node);  // a DeQuantStub after a custom LSTM
      } else if (auto custom = detail::custom_module_at(*node, gm, custom_classes)) {
        convert_custom_module(gm, *node, *custom, custom_classes, quantized_outputs);
      } else if (dynamic_cast<const nn::QuantizableLSTMImpl*>(gm.get_submodule(node->target()).get())) {
        TORCH_CHECK(false, "convert: %", node->name(),
                    " is a torch.ao.nn.quantizable.LSTM and the ConvertCustomConfig "
                    "maps it to no quantized class: map it to torch.ao.nn.quantized.LSTM under "
                    "observed_to_quantized_custom_module_class (qfx quantize --convert-custom-config)");
      } else if (auto* sm = dynamic_cast<nn::NestedGraphModuleImpl*>(gm.get_submodule(node->target()).get())) {
        convert_standalone(gm, *node, *sm, options);
      } else if (is_weighted_module(backend, *gm.get_submodule(node->target()))) {
        convert_weighted_module(gm, *node, weighted.of(gm, *node));
      }
    }
  }
}

}  // namespace

bool convert_to_reference(ir::GraphModule& gm, const ConvertToReferenceOptions& options) {
  static const CustomModuleMapping kNone;
  const CustomModuleMapping& custom_classes =
      options.convert_custom_config ? options.convert_custom_config->observed_to_quantized_custom_module_classes
                                    : kNone;
  for (ir::Node* node : gm.graph().nodes()) {  // kept by lowering on the quantized op that replaces a node
    if (node->meta().count(kPreparedNameMeta) == 0) node->meta()[kPreparedNameMeta] = node->name();
  }
  convert_nodes(gm, options, custom_classes);
  keep_outputs_quantized(gm.graph(), options.output_quantized_indexes);
  gm.graph().eliminate_dead_code();
  gm.rebuild_module_tree();
  gm.set_class_name("GraphModule");
  return true;
}

}  // namespace qfx::passes
