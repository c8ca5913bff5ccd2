#pragma once
/// \file
/// BackendConfig: what a backend can run, as `torch.ao.quantization.backend_config`
/// describes it. A BackendConfig is a list of BackendPatternConfigs; each
/// says, for one op pattern, which dtypes the backend supports (DTypeConfig,
/// DTypeWithConstraints), how observers are placed (ObservationType), and how
/// the pattern is fused and swapped (fused, QAT, root and reference modules).
///
/// Ops and modules are named by their PyTorch qualified names; fuser methods
/// and getters by the names they are registered under (BackendRegistry).
///
/// \code
///   DTypeWithConstraints quint8_with_constraints = c10::kQUInt8;
///   quint8_with_constraints.quant_min_lower_bound = 0;
///   quint8_with_constraints.quant_max_upper_bound = 255;
///   quint8_with_constraints.scale_min_lower_bound = std::pow(2.0, -12);
///   DTypeConfig weighted_int8{quint8_with_constraints, quint8_with_constraints, c10::kQInt8, c10::kFloat};
///
///   BackendConfig config("my_backend");
///   config.set_backend_pattern_config(
///       BackendPatternConfig()
///           .set_pattern("torch.nn.Linear")
///           .set_observation_type(ObservationType::OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT)
///           .add_dtype_config(weighted_int8)
///           .set_root_module("torch.nn.Linear")
///           .set_qat_module("torch.ao.nn.qat.Linear")
///           .set_reference_quantized_module("torch.ao.nn.quantized.reference.Linear"));
///   config.set_backend_pattern_config(
///       BackendPatternConfig()
///           .set_pattern({"torch.nn.Conv2d", "torch.nn.ReLU"})
///           .set_fused_module("torch.ao.nn.intrinsic.ConvReLU2d"));
/// \endcode

#include "qfx/pattern/pattern.h"
#include "qfx/quant/observer_spec.h"

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace qfx::backend {

/// How observers are placed around a pattern (PyTorch's ObservationType).
enum class ObservationType {
  /// Input and output observed by different observers (conv, linear, softmax).
  OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT,
  /// The output shares the input's observer (cat, max pool, reshape).
  OUTPUT_SHARE_OBSERVER_WITH_INPUT,
  /// Neither input nor output observed (ops that only pass quantized values on).
  INPUT_OUTPUT_NOT_OBSERVED,
};

/// "OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT", ...
const char* observation_type_name(ObservationType type);
/// Reads a name, with or without the `ObservationType.` prefix; nullopt if unknown.
std::optional<ObservationType> parse_observation_type(const std::string& name);

/// A dtype and the limits a backend puts on the qparams used with it.
/// Unset bounds do not constrain.
struct DTypeWithConstraints {
  std::optional<c10::ScalarType> dtype;
  std::optional<int64_t> quant_min_lower_bound;   ///< qconfig's quant_min must be >= this
  std::optional<int64_t> quant_max_upper_bound;   ///< qconfig's quant_max must be <= this
  std::optional<double> scale_min_lower_bound;    ///< the observer's eps must be >= this
  std::optional<double> scale_max_upper_bound;    ///< not enforced (as in PyTorch)
  std::optional<double> scale_exact_match;        ///< fixed-qparams ops: scale must equal this
  std::optional<int64_t> zero_point_exact_match;  ///< fixed-qparams ops: zero point must equal this

  DTypeWithConstraints() = default;
  DTypeWithConstraints(c10::ScalarType t) : dtype(t) {}  // NOLINT: a plain dtype, as in Python

  /// True when any bound is set.
  bool has_constraints() const;
  bool operator==(const DTypeWithConstraints& other) const;
  bool operator!=(const DTypeWithConstraints& other) const { return !(*this == other); }
};

/// The dtypes a pattern supports, one combination per DTypeConfig.
/// Aggregate: `DTypeConfig{c10::kQUInt8, c10::kQUInt8, c10::kQInt8, c10::kFloat}`.
struct DTypeConfig {
  DTypeWithConstraints input_dtype;
  DTypeWithConstraints output_dtype;
  DTypeWithConstraints weight_dtype;
  std::optional<c10::ScalarType> bias_dtype;
  std::optional<bool> is_dynamic;

  bool operator==(const DTypeConfig& other) const;
  bool operator!=(const DTypeConfig& other) const { return !(*this == other); }
};

/// How one op pattern is quantized on a backend. Setters return *this, as
/// in PyTorch; names are checked when set (c10::Error if unknown).
class BackendPatternConfig {
 public:
  BackendPatternConfig() = default;
  /// PyTorch 2.x's `BackendPatternConfig(pattern)`: a single op.
  explicit BackendPatternConfig(const std::string& op) { set_pattern(op); }

  /// One op: a module type, function or method.
  BackendPatternConfig& set_pattern(const std::string& op);
  /// A sequence of 2 or 3 ops in forward order: {"torch.nn.Conv2d", "torch.nn.ReLU"}.
  BackendPatternConfig& set_pattern(const std::vector<std::string>& ops);
  BackendPatternConfig& set_pattern(std::initializer_list<std::string> ops) {
    return set_pattern(std::vector<std::string>(ops));
  }
  /// The reversed nested-tuple format (see pattern.h).
  BackendPatternConfig& _set_pattern_complex_format(const pattern::NestedPattern& pattern);
  /// An already built pattern.
  BackendPatternConfig& set_pattern(pattern::Pattern pattern);

  BackendPatternConfig& set_observation_type(ObservationType type);
  BackendPatternConfig& add_dtype_config(const DTypeConfig& config);
  /// Replaces all dtype configs.
  BackendPatternConfig& set_dtype_configs(std::vector<DTypeConfig> configs);
  /// The module swapped for the reference module at convert (Linear for LinearReLU).
  BackendPatternConfig& set_root_module(const std::string& module_type);
  BackendPatternConfig& set_qat_module(const std::string& module_type);
  BackendPatternConfig& set_reference_quantized_module(const std::string& module_type);
  BackendPatternConfig& set_fused_module(const std::string& module_type);
  /// A fuser method registered with BackendRegistry. Without one, a pattern
  /// with a fused module is fused by constructing the fused module from the
  /// matched modules in order.
  BackendPatternConfig& set_fuser_method(const std::string& name);
  BackendPatternConfig& _set_root_node_getter(const std::string& name);
  BackendPatternConfig& _set_extra_inputs_getter(const std::string& name);
  BackendPatternConfig& _set_num_tensor_args_to_observation_type(std::map<int64_t, ObservationType> mapping);
  BackendPatternConfig& _set_input_type_to_index(std::map<std::string, int64_t> mapping);
  BackendPatternConfig& _set_input_output_observed(bool observed);
  BackendPatternConfig& _set_overwrite_output_fake_quantize(const quant::ObserverSpec& spec);
  BackendPatternConfig& _set_overwrite_output_observer(const quant::ObserverSpec& spec);

  const pattern::Pattern& pattern() const { return pattern_; }
  ObservationType observation_type() const { return observation_type_; }
  const std::vector<DTypeConfig>& dtype_configs() const { return dtype_configs_; }
  /// Module type names; empty when unset.
  const std::string& root_module() const { return root_module_; }
  const std::string& qat_module() const { return qat_module_; }
  const std::string& reference_quantized_module() const { return reference_quantized_module_; }
  const std::string& fused_module() const { return fused_module_; }
  /// Registered names; empty when unset.
  const std::string& fuser_method() const { return fuser_method_; }
  const std::string& root_node_getter() const { return root_node_getter_; }
  const std::string& extra_inputs_getter() const { return extra_inputs_getter_; }
  const std::map<int64_t, ObservationType>& num_tensor_args_to_observation_type() const {
    return num_tensor_args_to_observation_type_;
  }
  const std::map<std::string, int64_t>& input_type_to_index() const { return input_type_to_index_; }
  const std::optional<bool>& input_output_observed() const { return input_output_observed_; }
  const std::optional<quant::ObserverSpec>& overwrite_output_fake_quantize() const {
    return overwrite_output_fake_quantize_;
  }
  const std::optional<quant::ObserverSpec>& overwrite_output_observer() const { return overwrite_output_observer_; }

  /// Raises c10::Error when the config is incomplete or inconsistent: no
  /// pattern, or a fused module with neither a fuser method nor a sequence
  /// pattern of 2 or 3 ops to build it from.
  void validate() const;

  bool operator==(const BackendPatternConfig& other) const;
  bool operator!=(const BackendPatternConfig& other) const { return !(*this == other); }

 private:
  pattern::Pattern pattern_;
  ObservationType observation_type_ = ObservationType::OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT;
  std::vector<DTypeConfig> dtype_configs_;
  std::string root_module_;
  std::string qat_module_;
  std::string reference_quantized_module_;
  std::string fused_module_;
  std::string fuser_method_;
  std::string root_node_getter_;
  std::string extra_inputs_getter_;
  std::map<int64_t, ObservationType> num_tensor_args_to_observation_type_;
  std::map<std::string, int64_t> input_type_to_index_;
  std::optional<bool> input_output_observed_;
  std::optional<quant::ObserverSpec> overwrite_output_fake_quantize_;
  std::optional<quant::ObserverSpec> overwrite_output_observer_;
};

/// The patterns a backend supports. A config for a pattern already present
/// replaces it in place, as in PyTorch.
class BackendConfig {
 public:
  explicit BackendConfig(std::string name = "") : name_(std::move(name)) {}

  BackendConfig& set_name(std::string name);
  /// Validates `config` (BackendPatternConfig::validate) and adds it.
  BackendConfig& set_backend_pattern_config(BackendPatternConfig config);
  BackendConfig& set_backend_pattern_configs(const std::vector<BackendPatternConfig>& configs);

  const std::string& name() const { return name_; }
  /// In the order first set.
  const std::vector<BackendPatternConfig>& configs() const { return configs_; }
  /// The config of `pattern`, or nullptr.
  const BackendPatternConfig* find(const pattern::Pattern& pattern) const;
  /// The config whose pattern is the one module type `type` (a module class
  /// as PyTorch's pattern), or nullptr: where qat_module and the reference
  /// module of a module type are looked up.
  const BackendPatternConfig* module_config(const std::string& type) const;

  bool operator==(const BackendConfig& other) const { return name_ == other.name_ && configs_ == other.configs_; }
  bool operator!=(const BackendConfig& other) const { return !(*this == other); }

 private:
  std::string name_;
  std::vector<BackendPatternConfig> configs_;
  std::unordered_map<pattern::Pattern, size_t, pattern::PatternHash> index_;
  std::unordered_map<std::string, size_t> module_index_;  // single-module patterns by type
};

}  // namespace qfx::backend
