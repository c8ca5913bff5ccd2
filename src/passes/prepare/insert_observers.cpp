// insert-observers: PyTorch 1.13's prepare (fx/prepare.py,
// insert_observers_for_model), on a fused graph.
//
//   1. qconfig of every node (QConfigMapping, fused modules taking their
//      parts' object-type qconfig);
//   2. quantization patterns of the BackendConfig matched, longest first;
//   3. target dtypes of every node's inputs, weight, bias and output;
//   4. per original node, in order: skip it (no qconfig, no match, getitem),
//      or check the backend runs it as asked (else warn, stay float), then
//      observe the pattern's inputs at its root node and its output at its
//      last node; shape ops (OUTPUT_SHARE_OBSERVER_WITH_INPUT) share their
//      input's observer.
//
//   x -> linear -> relu       =>   x -> obs_0 -> linear -> obs_1 -> relu -> obs_1'
//                                  (obs_1' is the same module as obs_1)

#include "passes/backend_support.h"
#include "qfx/ir/op_names.h"
#include "passes/custom_lstm.h"
#include "passes/custom_module_swap.h"
#include "observer_inserter.h"
#include "qconfig_resolution.h"

#include "qfx/ir/module_registry.h"
#include "qfx/nn/intrinsic.h"
#include "qfx/nn/opaque_modules.h"
#include "qfx/nn/quantized_rnn.h"
#include "qfx/nn/reference.h"
#include "qfx/passes/pass.h"
#include "qfx/passes/pass_manager.h"
#include "qfx/passes/prepare_state.h"
#include "qfx/quant/qtypes.h"

#include <c10/util/Exception.h>

#include <unordered_set>

namespace qfx::passes {
namespace {

using detail::QuantMatch;

/// The op a node runs, for the fixed-qparams check: module type or function.
std::string fixed_qparams_key(const ir::Node& node, const ir::GraphModule& gm) {
  if (node.op() == ir::Opcode::kCallModule) return ir::module_type_name(*gm.get_submodule(node.target()));
  if (node.op() == ir::Opcode::kCallFunction) return pattern::canonical_op_name(node.target());
  return "";
}

/// Why a fixed-qparams op (sigmoid, tanh, ...) cannot use `qconfig` ("" if it can).
std::string fixed_qparams_violation(const ir::Node& node, const ir::GraphModule& gm, const quant::QConfig& qconfig) {
  std::string key = fixed_qparams_key(node, gm);
  for (const auto& [op, observer] : quant::fixed_qparams_op_observers()) {
    if (op != key) continue;
    std::vector<quant::ObserverSpec> allowed = {quant::qconfig_preset("float16_dynamic_qconfig")->activation,
                                                quant::qconfig_preset("float16_static_qconfig")->activation, observer};
    for (const quant::ObserverSpec& spec : allowed) {
      if (qconfig.activation == spec ||
          qconfig.activation == quant::ObserverSpec("FixedQParamsFakeQuantize", {{"observer", spec}})) {
        return "";
      }
    }
    return "the fixed-qparams op needs the activation observer " + observer.repr() +
           " (as in get_default_qconfig_mapping)";
  }
  return "";
}

/// PyTorch's assert_valid_qconfig: ConvTranspose has no per-channel weight
/// quantization ("" when the qconfig is valid for the node).
std::string weight_observer_violation(const ir::Node& node, const ir::GraphModule& gm, const quant::QConfig& qconfig) {
  if (node.op() != ir::Opcode::kCallModule) return "";
  std::string type = ir::module_type_name(*gm.get_submodule(node.target()));
  if (type.rfind("torch.nn.ConvTranspose", 0) != 0) return "";
  if (!quant::is_per_channel(qconfig.weight.prototype()->qscheme())) return "";
  return "per-channel weight observers are not supported for " + type.substr(type.rfind('.') + 1);
}

/// True for a value FX knows as a Python number: `x.size(0)`, `x.dim()`,
/// `x.numel()` and operator arithmetic on such numbers (`h // 2`). Memoized
/// in `known`.
bool is_python_number(const ir::Node& node, std::unordered_map<const ir::Node*, bool>& known) {
  auto it = known.find(&node);
  if (it != known.end()) return it->second;
  const std::string& t = node.target();
  bool number = node.op() == ir::Opcode::kCallMethod && (t == "size" || t == "dim" || t == "numel");
  if (node.op() == ir::Opcode::kCallFunction && t.rfind("operator.", 0) == 0 && t != ir::op::kGetitem) {
    number = !node.input_nodes().empty();
    for (const ir::Node* input : node.input_nodes()) number = number && is_python_number(*input, known);
  }
  if (node.op() == ir::Opcode::kCallFunction && t == ir::op::kGetitem && node.args().at(0).is_node()) {
    number = is_python_number(*node.args().at(0).to_node(), known);  // h = x.size()[2]
  }
  return known[&node] = number;
}

struct PrepareContext {
  ir::GraphModule& gm;
  const InsertObserversOptions& options;
  detail::QuantMatches matches;
  std::unordered_map<const ir::Node*, quant::QConfigAny> qconfigs;
  std::unordered_map<const ir::Node*, detail::DtypeInfo> dtypes;
  detail::WeightArgs weight_args;
  std::unordered_set<const QuantMatch*> rejected;  // warned about once
  std::unordered_map<const ir::Node*, bool> python_numbers;
  // warnings of tensors that stay float because a shape op reads them as sizes: one line for all
  std::vector<std::string> shape_argument_warnings;
};

/// A dynamic qconfig asks for dynamic quantization where the backend has it:
/// on a pattern without a dynamic dtype config the node stays float without a
/// warning, as in PyTorch (`set_global(default_dynamic_qconfig)` quantizes the
/// Linear layers of a CNN and leaves its convolutions float).
bool no_dynamic_kernel(const QuantMatch& match, const quant::QConfig& qconfig) {
  if (!quant::activation_is_dynamically_quantized(qconfig)) return false;
  for (const backend::DTypeConfig& config : match.config->dtype_configs()) {
    if (config.is_dynamic.value_or(false)) return false;
  }
  return true;
}

/// "" unless the pattern's module is one with a reference module in the
/// BackendConfig that qfx does not implement (a custom BackendConfig's),
/// which then stays float instead of failing in convert.
std::string unconvertible_module(const ir::Node& node, const ir::GraphModule& gm, const QuantMatch& match) {
  if (node.op() != ir::Opcode::kCallModule || match.config->reference_quantized_module().empty()) return "";
  std::string type = ir::module_type_name(*gm.get_submodule(node.target()));
  if (type != match.config->root_module() || nn::has_reference_module(type) || nn::has_reference_rnn(type)) return "";
  return "qfx has no " + match.config->reference_quantized_module() + " yet (" + type + " is kept float)";
}

bool supported(PrepareContext& ctx, const ir::Node& node, const QuantMatch& match, const quant::QConfig& qconfig) {
  if (ctx.rejected.count(&match) > 0) return false;
  std::string why = unconvertible_module(node, ctx.gm, match);
  if (why.empty()) why = fixed_qparams_violation(node, ctx.gm, qconfig);
  if (why.empty()) why = weight_observer_violation(node, ctx.gm, qconfig);
  if (why.empty()) why = detail::unsupported_reason(match, qconfig, ctx.dtypes, ctx.weight_args);
  if (why.empty()) return true;
  ctx.rejected.insert(&match);
  bool expected = no_dynamic_kernel(match, qconfig);
  if (expected) why = "the backend has no dynamic quantization of " + match.config->pattern().str();
  // an input that is float, or a node that gives a number (`x.size(0)`, `h // 2`): nothing to warn about
  if (!ctx.dtypes.at(match.root).input || is_python_number(*match.last, ctx.python_numbers)) expected = true;
  for (ir::Node* n : match.nodes) n->meta()[kFloatReasonMeta] = why;
  if (ctx.options.explain) *ctx.options.explain << "%" << match.last->name() << " stays float: " << why << "\n";
  if (expected) return false;
  std::string warning = "%" + match.last->name() + " (" + match.config->pattern().str() + ") stays float: " + why;
  if (ctx.dtypes.at(match.root).set_by != nullptr) {
    ctx.shape_argument_warnings.push_back(warning);
  } else {
    TORCH_WARN("prepare: ", warning);
  }
  return false;
}

/// The shape-argument warnings: one as it is, several as one line (the
/// report gives each node's reason).
void warn_shape_arguments(const std::vector<std::string>& warnings) {
  if (warnings.size() == 1) TORCH_WARN("prepare: ", warnings[0]);
  if (warnings.size() <= 1) return;
  TORCH_WARN("prepare: ", warnings.size(),
             " nodes whose values a shape op reads as sizes stay float, the first: ", warnings[0]);
}

void observe_output(PrepareContext& ctx, detail::ObserverInserter& inserter, ir::Node& node, const QuantMatch& match,
                    const quant::QConfig& qconfig) {
  detail::TargetDtype dtype = ctx.dtypes.at(&node).output;
  if (detail::is_unobservable(dtype) || dtype == c10::kFloat || !quant::activation_is_statically_quantized(qconfig)) {
    return;
  }
  quant::ObserverSpec spec = qconfig.activation;
  c10::ScalarType act = quant::qconfig_dtypes(qconfig).activation;
  if (act == c10::kQUInt8 && match.config != nullptr) {
    const auto& overwrite =
        ctx.options.is_qat ? match.config->overwrite_output_fake_quantize() : match.config->overwrite_output_observer();
    if (overwrite) spec = *overwrite;
  }
  ir::Node* observer = inserter.insert_after(node, spec);
  std::vector<ir::Node*> users = node.users();
  for (ir::Node* user : users) {
    if (user != observer) user->replace_input_with(&node, observer);
  }
  bool same_graph = !(inserter.output_dtype(node) == c10::kQUInt8 && !node.args().empty() && node.args()[0].is_node() &&
                      node.args()[0].to_node()->op() == ir::Opcode::kPlaceholder);
  if ((match.shares_observer() && same_graph) || quant::is_reuse_input_qconfig(qconfig)) {
    if (!inserter.share_input_observer(node)) inserter.remove_output_observers(node);
  }
}

void observe_graph_output(PrepareContext& ctx, detail::ObserverInserter& inserter, ir::Node& output,
                          const std::vector<int64_t>& output_quantized_indexes) {
  if (output_quantized_indexes.empty()) return;
  TORCH_CHECK(output_quantized_indexes == std::vector<int64_t>{0}, "output_quantized_indexes must be [] or [0], got ",
              output_quantized_indexes.size(), " indexes");
  std::function<ir::Argument(const ir::Argument&)> observe = [&](const ir::Argument& arg) -> ir::Argument {
    if (arg.has_items()) {
      ir::Argument::Items items;
      for (const ir::Argument& item : arg.items()) items.push_back(observe(item));
      return arg.kind() == ir::Argument::Kind::kTuple ? ir::Argument::tuple(items) : ir::Argument::list(items);
    }
    if (!arg.is_node() || inserter.output_dtype(*arg.to_node()) == c10::kQUInt8) return arg;
    const quant::QConfigAny& qconfig = ctx.qconfigs[arg.to_node()];
    TORCH_CHECK(qconfig, "quantizing the graph output %", arg.to_node()->name(), " needs a qconfig for it");
    return ir::Argument(inserter.insert_after(*arg.to_node(), qconfig->activation));
  };
  output.set_args({observe(output.args().at(0))});
}

void mark_observed(const QuantMatch& match) {
  for (ir::Node* node : match.nodes) node->meta()[kObservedMeta] = true;
}

/// A weighted module whose qconfig its own dtype configs do not take (an
/// Embedding under a static qconfig) is observed around, as in PyTorch, but
/// convert keeps it float: the reason, for the report.
void note_float_weighted_module(const PrepareContext& ctx, ir::Node& node, const quant::QConfig& qconfig) {
  if (node.op() != ir::Opcode::kCallModule) return;
  std::string type = ir::module_type_name(*ctx.gm.get_submodule(node.target()));
  if (!nn::has_reference_module(type)) return;
  const backend::BackendPatternConfig* config = ctx.options.backend().module_config(type);
  if (config == nullptr || detail::supported_by_dtype_configs(qconfig, config->dtype_configs())) return;
  node.meta()[kFloatReasonMeta] =
      "convert keeps it float: no dtype config of the backend's " + type + " takes its qconfig's dtypes";
}

/// The standalone module `node` calls, or nullptr.
nn::NestedGraphModuleImpl* standalone_module(const ir::Node& node, const ir::GraphModule& gm) {
  if (node.op() != ir::Opcode::kCallModule) return nullptr;
  return dynamic_cast<nn::NestedGraphModuleImpl*>(gm.get_submodule(node.target()).get());
}

/// The standalone module's own pass options, from its PrepareCustomConfig
/// entry and the parent's (PyTorch's get_standalone_module_configs).
PassOptions standalone_options(const PrepareContext& ctx, const ir::Node& node, const nn::NestedGraphModuleImpl& sm) {
  const PrepareCustomConfig* custom = ctx.options.prepare_custom_config.get();
  const StandaloneModuleConfig* entry = custom ? custom->standalone_config(node.target(), sm.python_class()) : nullptr;
  TORCH_CHECK(entry != nullptr, "prepare: %", node.name(), " calls '", node.target(), "' (", sm.python_class(),
              "), imported as a standalone module, but the PrepareCustomConfig has no standalone module entry for it");
  PassOptions options;
  options.backend_config = entry->backend_config ? entry->backend_config : ctx.options.backend_config;
  if (entry->qconfig_mapping) {
    options.qconfig_mapping = entry->qconfig_mapping;
  } else {
    auto mapping = std::make_shared<quant::QConfigMapping>();
    mapping->set_global(ctx.qconfigs.count(&node) > 0 ? ctx.qconfigs.at(&node) : std::nullopt);
    options.qconfig_mapping = mapping;
  }
  options.prepare_custom_config =
      entry->prepare_custom_config ? entry->prepare_custom_config : std::make_shared<PrepareCustomConfig>();
  options.input_quantized_indexes = options.prepare_custom_config->input_quantized_indexes;
  options.output_quantized_indexes = options.prepare_custom_config->output_quantized_indexes;
  options.is_qat = ctx.options.is_qat;
  options.is_standalone = true;
  options.explain = ctx.options.explain;
  return options;
}

/// PyTorch's run_prepare_fx_on_standalone_modules and its standalone-module
/// input observers: the module is prepared on its own; the parent observes
/// only the inputs the module takes quantized, never its output.
void prepare_standalone(PrepareContext& ctx, detail::ObserverInserter& inserter, ir::Node& node,
                        nn::NestedGraphModuleImpl& sm) {
  PassOptions options = standalone_options(ctx, node, sm);
  PassManager manager;
  manager.add("fuse");
  if (options.is_qat) manager.add("swap-qat-modules");
  manager.add("insert-observers").run(sm.graph_module(), options);
  sm.input_quantized_indexes = options.input_quantized_indexes;
  sm.output_quantized_indexes = options.output_quantized_indexes;
  const quant::QConfigAny& qconfig = ctx.qconfigs[&node];
  if (!qconfig) return;
  node.meta()[kObservedMeta] = true;
  inserter.set_standalone_inputs(node, sm.input_quantized_indexes);
  inserter.observe_inputs(node, *qconfig);
}

const CustomModuleMapping& float_to_observed(const PrepareContext& ctx) {
  static const CustomModuleMapping kNone;
  const PrepareCustomConfig* custom = ctx.options.prepare_custom_config.get();
  return custom ? custom->float_to_observed_custom_module_classes : kNone;
}

/// PyTorch's custom module flow: inputs and output observed as for any
/// quantized op (a custom module LSTM's outputs get DeQuantStubs instead),
/// then the module swapped for its observed class (from_float).
void prepare_custom_module(PrepareContext& ctx, detail::ObserverInserter& inserter, ir::Node& node,
                           const QuantMatch& match, const torch::nn::Module& module) {
  const quant::QConfigAny& qconfig = ctx.qconfigs[&node];
  if (!qconfig) return;
  node.meta()[kObservedMeta] = true;
  inserter.observe_inputs(node, *qconfig);
  if (detail::is_custom_module_lstm(module, *qconfig)) {
    detail::insert_lstm_dequant_stubs(ctx.gm, node, ctx.dtypes);
  } else {
    observe_output(ctx, inserter, node, match, *qconfig);
  }
  const nn::CustomModuleClass& observed = detail::swapped_class(node, module, float_to_observed(ctx), *qconfig);
  TORCH_CHECK(observed.from_float, "%", node.name(), ": custom module class '", observed.name, "' has no from_float");
  ctx.gm.add_submodule(node.target(), observed.from_float(module, *qconfig));
}

/// Standalone and custom module calls as matches without a pattern, as
/// find_matches adds them.
void add_handler_matches(PrepareContext& ctx) {
  for (ir::Node* node : ctx.gm.graph().nodes()) {
    if (standalone_module(*node, ctx.gm) == nullptr &&
        detail::custom_module_at(*node, ctx.gm, float_to_observed(ctx)) == nullptr) {
      continue;
    }
    auto match = std::make_shared<QuantMatch>();
    match->config = nullptr;
    match->root = match->last = node;
    match->observation_type = backend::ObservationType::OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT;
    match->nodes = {node};
    ctx.matches[node] = std::move(match);
  }
}

void prepare_node(PrepareContext& ctx, detail::ObserverInserter& inserter, ir::Node& node) {
  if (auto* sm = standalone_module(node, ctx.gm)) return prepare_standalone(ctx, inserter, node, *sm);
  auto found = ctx.matches.find(&node);
  const QuantMatch* match = found == ctx.matches.end() ? nullptr : found->second.get();
  if (auto custom = detail::custom_module_at(node, ctx.gm, float_to_observed(ctx))) {
    return prepare_custom_module(ctx, inserter, node, *match, *custom);
  }
  const quant::QConfigAny qconfig = match ? ctx.qconfigs[&node] : std::nullopt;
  bool is_getitem = node.op() == ir::Opcode::kCallFunction && node.target() == ir::op::kGetitem;
  if (!qconfig || is_getitem) return;
  if (!supported(ctx, node, *match, *qconfig)) return;
  mark_observed(*match);
  note_float_weighted_module(ctx, node, *qconfig);
  if (&node == match->root) inserter.observe_inputs(node, *qconfig);
  if (&node == match->last) observe_output(ctx, inserter, node, *match, *qconfig);
}

}  // namespace

bool insert_observers(ir::GraphModule& gm, const InsertObserversOptions& options) {
  TORCH_CHECK(options.qconfig_mapping, "insert-observers needs a QConfigMapping");
  PrepareContext ctx{gm, options, {}, {}, {}, detail::WeightArgs(options.backend()), {}};
  ctx.qconfigs = detail::node_qconfigs(gm, *options.qconfig_mapping);
  ctx.matches = detail::find_quant_matches(gm, options.backend());
  add_handler_matches(ctx);
  ctx.dtypes = detail::target_dtypes(gm, ctx.matches, ctx.qconfigs, options.input_quantized_indexes,
                                     options.output_quantized_indexes);
  for (const auto& [node, qconfig] : ctx.qconfigs) const_cast<ir::Node*>(node)->meta()[kQConfigMeta] = qconfig;

  if (options.is_standalone) {
    const ir::Argument& result = gm.graph().output_node()->args().at(0);
    TORCH_CHECK(result.is_node(), "prepare: a standalone module must return one value (not a tuple or list)");
  }
  detail::ObserverInserter inserter(gm, ctx.dtypes, ctx.weight_args);
  size_t size_before = gm.graph().size();
  for (ir::Node* node : gm.graph().node_list()) {
    if (node->op() == ir::Opcode::kPlaceholder || node->op() == ir::Opcode::kGetAttr) continue;
    if (node->op() == ir::Opcode::kOutput) {
      observe_graph_output(ctx, inserter, *node, options.output_quantized_indexes);
    } else {
      prepare_node(ctx, inserter, *node);
    }
  }
  warn_shape_arguments(ctx.shape_argument_warnings);
  gm.rebuild_module_tree();  // as PyTorch's ObservedGraphModule(model, graph)
  return gm.graph().size() != size_before;
}

}  // namespace qfx::passes
