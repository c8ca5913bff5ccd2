// unsupported_reason: the dtype configs of a pattern against a node's target
// dtypes and its qconfig's observers.

#include "backend_support.h"

#include "qfx/ir/python_literals.h"
#include "qfx/quant/fake_quantize.h"
#include "qfx/quant/observer_base.h"
#include "qfx/quant/simple_observers.h"

#include <string>

namespace qfx::passes::detail {
namespace {

using backend::DTypeConfig;
using backend::DTypeWithConstraints;

/// A dtype as PyTorch writes it; the stand-ins as the Python types they stand for.
std::string name_of(const TargetDtype& dtype) {
  if (!dtype) return "None";
  if (*dtype == c10::kLong) return "int";
  if (*dtype == c10::kDouble) return "float";
  return ir::dtype_name(*dtype);
}

/// " (set by %view's shape arguments)" when a shape op's argument gave the
/// node its dtype, else "".
std::string set_by_note(const DtypeInfo& info) {
  if (info.set_by == nullptr) return "";
  return " (set by %" + info.set_by->name() + "'s " + info.set_by->target() + " arguments)";
}

/// The observer inside a fake-quantize module (PyTorch's
/// _get_observer_from_activation_post_process).
const quant::ActivationPostProcess& observer_of(const quant::ActivationPostProcess& app) {
  if (auto* fq = dynamic_cast<const quant::FakeQuantizeImpl*>(&app)) return fq->observer();
  if (auto* fq = dynamic_cast<const quant::FixedQParamsFakeQuantizeImpl*>(&app)) return *fq->activation_post_process;
  if (auto* fq = dynamic_cast<const quant::FusedMovingAvgObsFakeQuantizeImpl*>(&app)) {
    return *fq->activation_post_process;
  }
  if (auto* fq = dynamic_cast<const quant::LearnableFakeQuantizeImpl*>(&app)) return *fq->activation_post_process;
  return app;
}

/// Which of quant_min/quant_max and eps the observer class has (Python attributes).
bool has_quant_range(const quant::ActivationPostProcess& obs) {
  return dynamic_cast<const quant::UniformObserverBase*>(&obs) != nullptr ||
         dynamic_cast<const quant::FixedQParamsObserverImpl*>(&obs) != nullptr;
}
bool has_eps(const quant::ActivationPostProcess& obs) {
  return dynamic_cast<const quant::UniformObserverBase*>(&obs) != nullptr;
}

/// "" if the qconfig's observer meets the constraints, else why not (no
/// stream: this runs for every matched node and dtype config).
std::string constraint_violation(const quant::ObserverSpec& spec, const DTypeWithConstraints& limits,
                                 const char* what) {
  if (!limits.dtype) return "";
  std::shared_ptr<quant::ActivationPostProcess> app = spec.prototype();
  if (app->dtype() != *limits.dtype) return "";
  const quant::ActivationPostProcess& obs = observer_of(*app);
  auto observer = [&] { return std::string(what) + " observer " + spec.short_type(); };
  if (limits.quant_min_lower_bound && limits.quant_max_upper_bound) {
    auto [qmin, qmax] = obs.quant_range();
    if (!has_quant_range(obs)) return observer() + " must specify quant_min and quant_max";
    if (qmin < *limits.quant_min_lower_bound || qmax > *limits.quant_max_upper_bound) {
      return std::string(what) + " quantization range (" + std::to_string(qmin) + ", " + std::to_string(qmax) +
             ") must fall within the backend's (" + std::to_string(*limits.quant_min_lower_bound) + ", " +
             std::to_string(*limits.quant_max_upper_bound) + ")";
    }
  }
  if (limits.scale_min_lower_bound) {
    if (!has_eps(obs)) return observer() + " must specify eps";
    if (obs.eps() < *limits.scale_min_lower_bound) {
      return std::string(what) + " eps (" + ir::python_float_repr(obs.eps()) +
             ") must be >= the backend's min scale (" + ir::python_float_repr(*limits.scale_min_lower_bound) + ")";
    }
  }
  if (limits.scale_exact_match || limits.zero_point_exact_match) {
    auto backends_qparams = [&] {
      quant::QParams qparams = app->calculate_qparams();
      return (!limits.scale_exact_match || qparams.scale.item<double>() == *limits.scale_exact_match) &&
             (!limits.zero_point_exact_match || qparams.zero_point.item<int64_t>() == *limits.zero_point_exact_match);
    };
    // PyTorch asks for a fixed-qparams observer before it reads any qparams
    if (!app->has_fixed_qparams() || !backends_qparams()) return observer() + " must have the backend's fixed qparams";
  }
  return "";
}

std::string input_violation(const ir::Node& node, const ir::Argument& arg, const DtypeInfo& info,
                            const quant::QConfig& qconfig, const DTypeConfig& config, const WeightArgs& weight_args) {
  if (arg.has_items()) {
    for (const ir::Argument& item : arg.items()) {
      std::string why = input_violation(node, item, info, qconfig, config, weight_args);
      if (!why.empty()) return why;
    }
    return "";
  }
  if (!arg.is_node()) return "";
  if (weight_args.is_weight(node, arg)) {
    if (!config.weight_dtype.dtype) return "";
    if (info.weight != config.weight_dtype.dtype) {
      return "weight dtype " + name_of(info.weight) + " is not the backend's " + name_of(config.weight_dtype.dtype);
    }
    return constraint_violation(qconfig.weight, config.weight_dtype, "weight");
  }
  if (weight_args.is_bias(node, arg)) {
    if (!config.bias_dtype || info.bias == config.bias_dtype) return "";
    return "bias dtype " + name_of(info.bias) + " is not the backend's " + name_of(config.bias_dtype);
  }
  if (!config.input_dtype.dtype) return "";
  bool dynamic_only = config.is_dynamic.value_or(false) && !info.input_is_dynamic;
  if (info.input == config.input_dtype.dtype && dynamic_only) {
    return "the backend quantizes it only dynamically (a dynamic qconfig, e.g. qfx quantize --dynamic)";
  }
  if (info.input != config.input_dtype.dtype || config.is_dynamic.value_or(false) != info.input_is_dynamic) {
    return std::string("input dtype ") + name_of(info.input) + (info.input_is_dynamic ? " (dynamic)" : "") +
           " is not the backend's " + name_of(config.input_dtype.dtype) +
           (config.is_dynamic.value_or(false) ? " (dynamic)" : "") + set_by_note(info);
  }
  return constraint_violation(qconfig.activation, config.input_dtype, "activation");
}

std::string output_violation(const DtypeInfo& info, const quant::QConfig& qconfig, const DTypeConfig& config) {
  if (!config.output_dtype.dtype) return "";
  if (info.output != config.output_dtype.dtype) {
    return "output dtype " + name_of(info.output) + " is not the backend's " + name_of(config.output_dtype.dtype);
  }
  return constraint_violation(qconfig.activation, config.output_dtype, "activation");
}

std::string config_violation(const QuantMatch& match, const quant::QConfig& qconfig, const DTypeConfig& config,
                             const std::unordered_map<const ir::Node*, DtypeInfo>& dtypes,
                             const WeightArgs& weight_args) {
  const ir::Node& input = *match.root;
  const DtypeInfo& input_info = dtypes.at(&input);
  for (const ir::Argument& arg : input.args()) {
    std::string why = input_violation(input, arg, input_info, qconfig, config, weight_args);
    if (!why.empty()) return why;
  }
  for (const auto& [key, arg] : input.kwargs()) {
    std::string why = input_violation(input, arg, input_info, qconfig, config, weight_args);
    if (!why.empty()) return why;
  }
  return output_violation(dtypes.at(match.last), qconfig, config);
}

}  // namespace

std::string unsupported_reason(const QuantMatch& match, const quant::QConfig& qconfig,
                               const std::unordered_map<const ir::Node*, DtypeInfo>& dtypes,
                               const WeightArgs& weight_args) {
  const std::vector<DTypeConfig>& configs = match.config->dtype_configs();
  if (configs.empty()) return "the backend has no dtype config for " + match.config->pattern().str();
  std::string first_reason;
  for (const DTypeConfig& config : configs) {
    std::string why = config_violation(match, qconfig, config, dtypes, weight_args);
    if (why.empty()) return "";
    if (first_reason.empty()) first_reason = why;
  }
  return first_reason;
}

/// PyTorch's is_qconfig_supported_by_dtype_configs (convert's check of a
/// weighted module's qconfig against its own pattern's dtype configs).
bool supported_by_dtype_configs(const quant::QConfig& qconfig, const std::vector<backend::DTypeConfig>& configs) {
  quant::QConfigDtypes q = quant::qconfig_dtypes(qconfig);
  for (const backend::DTypeConfig& c : configs) {
    bool dynamic = c.is_dynamic.value_or(false);
    c10::ScalarType input = c.input_dtype.dtype.value_or(c10::kFloat);
    c10::ScalarType weight = c.weight_dtype.dtype.value_or(c10::kFloat);
    c10::ScalarType output = c.output_dtype.dtype.value_or(c10::kFloat);
    c10::ScalarType bias = c.bias_dtype.value_or(c10::kFloat);
    c10::ScalarType qbias = q.activation == c10::kHalf && q.weight == c10::kHalf && !dynamic ? c10::kHalf : c10::kFloat;
    bool match = dynamic ? q.compute && input == *q.compute && output == c10::kFloat && weight == q.weight
                         : input == q.activation && output == q.activation && weight == q.weight && bias == qbias;
    if (match) return true;
  }
  return false;
}

}  // namespace qfx::passes::detail
