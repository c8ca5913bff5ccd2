// The per-node quantization report, read from a prepared, calibrated model:
// node meta (qconfig, observed, why it stays float) and the observers around
// each node.

#include "qfx/report/quantize_report.h"

#include "qfx/ir/module_registry.h"
#include "qfx/ir/python_literals.h"
#include "qfx/nn/intrinsic.h"
#include "qfx/nn/reference.h"
#include "qfx/passes/prepare_state.h"
#include "qfx/quant/observer_base.h"
#include "qfx/quant/qtypes.h"
#include "qfx/quant/simple_observers.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

namespace qfx {
namespace {

/// Per-channel qparams as a list, per-tensor ones as one number.
nlohmann::json numbers(const at::Tensor& t, bool per_channel, bool integral) {
  at::Tensor flat = t.to(at::kDouble).reshape(-1).contiguous();
  std::vector<double> values(flat.data_ptr<double>(), flat.data_ptr<double>() + flat.numel());
  nlohmann::json out = nlohmann::json::array();
  for (double v : values) out.push_back(integral ? nlohmann::json(static_cast<int64_t>(v)) : nlohmann::json(v));
  return per_channel || out.size() != 1 ? out : out[0];
}

nlohmann::json qparams_json(quant::ActivationPostProcess& obs) {
  nlohmann::json j = {{"dtype", ir::dtype_name(obs.dtype())}, {"qscheme", quant::qscheme_name(obs.qscheme())}};
  bool placeholder = dynamic_cast<const quant::PlaceholderObserverImpl*>(&obs) != nullptr;  // dynamic: no qparams
  if (quant::is_quantized_dtype(obs.dtype()) && !placeholder) {
    quant::QParams q = obs.calculate_qparams();
    bool per_channel = quant::is_per_channel(obs.qscheme());
    j["scale"] = numbers(q.scale, per_channel, false);
    j["zero_point"] = numbers(q.zero_point, per_channel, true);
    if (per_channel) j["axis"] = obs.ch_axis();
  }
  return j;
}

std::shared_ptr<quant::ActivationPostProcess> observer_of(const ir::GraphModule& gm, const ir::Node* n) {
  if (n == nullptr || !passes::is_observer_node(*n, gm)) return nullptr;
  return std::dynamic_pointer_cast<quant::ActivationPostProcess>(gm.get_submodule(n->target()));
}

std::string mode_of(const quant::QConfig& qconfig) {
  quant::QConfigDtypes d = quant::qconfig_dtypes(qconfig);
  if (d.compute) return "dynamic";
  if (d.activation == c10::kHalf) return "float16";
  if (quant::is_quantized_dtype(d.activation)) return "static";
  if (quant::is_quantized_dtype(d.weight) || d.weight == c10::kHalf) return "weight_only";
  return "none";
}

nlohmann::json weight_qparams(const ir::GraphModule& gm, const ir::Node& n, const quant::QConfig& qconfig) {
  if (n.op() != ir::Opcode::kCallModule) return nullptr;
  auto module = gm.get_submodule(n.target());
  if (auto* fused = dynamic_cast<const nn::FusedModuleImpl*>(module.get())) module = fused->module(0);
  // only modules convert gives a quantized weight (not BatchNorm's or PReLU's)
  if (!nn::has_reference_module(ir::module_type_name(*module))) return nullptr;
  auto params = module->named_parameters(false);  // find() points into this dict
  const at::Tensor* weight = params.find("weight");
  if (weight == nullptr) return nullptr;
  std::shared_ptr<quant::ActivationPostProcess> obs = qconfig.weight.make();
  try {
    obs->forward(weight->detach());
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, "%", n.name(), " (", ir::module_type_name(*module), "): its weight observer ",
                ir::module_type_name(*obs), ": ", e.what_without_backtrace());
  }
  return qparams_json(*obs);
}

/// An argument's qparams: its observer's, null when not observed; a tuple or
/// list (an LSTM's `(h, c)`) as the list of its parts'.
nlohmann::json argument_qparams(const ir::GraphModule& gm, const ir::Argument& a) {
  if (a.kind() == ir::Argument::Kind::kTuple || a.kind() == ir::Argument::Kind::kList) {
    nlohmann::json parts = nlohmann::json::array();
    for (const ir::Argument& item : a.items()) parts.push_back(argument_qparams(gm, item));
    return parts;
  }
  auto obs = a.is_node() ? observer_of(gm, a.to_node()) : nullptr;
  return obs ? qparams_json(*obs) : nlohmann::json(nullptr);
}

/// The observers inside a call_module node's module (the static LSTM's gates,
/// `layers.0.layer_fw.cell.input_gate`), keyed by their path within it.
nlohmann::json internal_qparams(const ir::GraphModule& gm, const ir::Node& n) {
  nlohmann::json out = nlohmann::json::object();
  if (n.op() != ir::Opcode::kCallModule) return out;
  for (const auto& item : gm.get_submodule(n.target())->named_modules("", /*include_self=*/false)) {
    const std::string& path = item.key();
    bool weight = path.size() >= 17 && path.compare(path.size() - 17, 17, "weight_fake_quant") == 0;  // weight_qparams
    auto* obs = dynamic_cast<quant::ActivationPostProcess*>(item.value().get());
    if (obs != nullptr && !weight) out[path] = qparams_json(*obs);
  }
  return out;
}

/// The report entry of a node present in the prepared graph.
nlohmann::json entry(const ir::GraphModule& gm, const ir::Node& n) {
  nlohmann::json j;
  const quant::QConfigAny& qconfig = passes::node_qconfig(n);
  bool observed = passes::node_is_observed(n);
  bool stays_float = n.meta().count(passes::kFloatReasonMeta) > 0;
  std::string mode = observed && qconfig && !stays_float ? mode_of(*qconfig) : "none";
  j["quantized"] = mode != "none";
  j["mode"] = mode;
  if (mode == "none") {
    auto why = n.meta().find(passes::kFloatReasonMeta);
    j["reason"] = why != n.meta().end()                                   ? std::any_cast<std::string>(why->second)
                  : n.meta().count(passes::kQConfigMeta) == 0 || !qconfig ? "the QConfigMapping gives it no qconfig"
                  : observed                                              ? "its qconfig quantizes nothing"
                                                                          : "no pattern of the BackendConfig covers it";
  }
  nlohmann::json inputs = nlohmann::json::array();
  for (const ir::Argument& a : n.args()) inputs.push_back(argument_qparams(gm, a));
  j["input_qparams"] = inputs;
  j["output_qparams"] = nullptr;
  for (const ir::Node* user : n.users()) {
    if (auto obs = observer_of(gm, user)) j["output_qparams"] = qparams_json(*obs);
  }
  j["weight_qparams"] = observed && qconfig && mode != "none" ? weight_qparams(gm, n, *qconfig) : nullptr;
  nlohmann::json internal = internal_qparams(gm, n);
  if (!internal.empty()) j["internal_qparams"] = internal;
  return j;
}

}  // namespace

std::vector<ReportNode> report_nodes_of(const ir::GraphModule& float_model) {
  std::vector<ReportNode> nodes;
  for (const ir::Node* n : float_model.graph().nodes()) {
    if (n->op() == ir::Opcode::kPlaceholder || n->op() == ir::Opcode::kGetAttr || n->op() == ir::Opcode::kOutput) {
      continue;
    }
    std::string op = n->op() == ir::Opcode::kCallModule     ? "call_module"
                     : n->op() == ir::Opcode::kCallFunction ? "call_function"
                                                            : "call_method";
    std::string type =
        n->op() == ir::Opcode::kCallModule ? ir::module_type_name(*float_model.get_submodule(n->target())) : "";
    std::string first = !n->args().empty() && n->args()[0].is_node() ? n->args()[0].to_node()->name() : "";
    nodes.push_back({n->name(), op, n->target(), type, first});
  }
  return nodes;
}

nlohmann::json quantization_report(const ir::GraphModule& prepared, const std::vector<ReportNode>& float_nodes) {
  nlohmann::json out = nlohmann::json::array();
  std::map<std::string, nlohmann::json> entries;
  for (const ReportNode& f : float_nodes) {
    nlohmann::json j = {{"name", f.name}, {"op", f.op}, {"target", f.target}};
    if (!f.module_type.empty()) j["module_type"] = f.module_type;
    const ir::Node* n = prepared.graph().find_node(f.name);
    if (n != nullptr) {
      j.update(entry(prepared, *n));
    } else {
      // fused into the node it follows (conv-bn-relu keeps the conv's name)
      auto into = entries.find(f.first_input);
      bool quantized = into != entries.end() && into->second.value("quantized", false);
      j["quantized"] = quantized;
      j["mode"] = into != entries.end() ? into->second.value("mode", "none") : "none";
      j["fused_into"] = f.first_input;
      if (!quantized) j["reason"] = "fused into %" + f.first_input + ", which stays float";
    }
    entries[f.name] = j;
    out.push_back(j);
  }
  return out;
}

}  // namespace qfx
