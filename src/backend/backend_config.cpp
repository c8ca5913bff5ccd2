// BackendConfig and its parts: fluent setters that check every name when it
// is set, and PyTorch's "a pattern set again replaces its config" rule.

#include "qfx/backend/backend_config.h"
#include "util/json_path.h"

#include "qfx/backend/backend_registry.h"

#include <c10/util/Exception.h>

namespace qfx::backend {
namespace {

constexpr std::pair<ObservationType, const char*> kObservationTypeNames[] = {
    {ObservationType::OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT, "OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT"},
    {ObservationType::OUTPUT_SHARE_OBSERVER_WITH_INPUT, "OUTPUT_SHARE_OBSERVER_WITH_INPUT"},
    {ObservationType::INPUT_OUTPUT_NOT_OBSERVED, "INPUT_OUTPUT_NOT_OBSERVED"},
};

std::string module_name(const std::string& name) { return pattern::OpCatalog::instance().resolve_module(name); }

template <typename Table>
std::string registered(const Table* found, const std::string& name, const char* what) {
  TORCH_CHECK(found, "unknown ", what, " ", qfx::detail::echoed(name),
              " (register it with qfx::backend::BackendRegistry)");
  return name;
}

}  // namespace

const char* observation_type_name(ObservationType type) {
  for (const auto& [t, name] : kObservationTypeNames) {
    if (t == type) return name;
  }
  return "?";
}

std::optional<ObservationType> parse_observation_type(const std::string& name) {
  const std::string prefix = "ObservationType.";
  std::string bare = name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
  for (const auto& [t, n] : kObservationTypeNames) {
    if (bare == n) return t;
  }
  return std::nullopt;
}

bool DTypeWithConstraints::has_constraints() const {
  return quant_min_lower_bound || quant_max_upper_bound || scale_min_lower_bound || scale_max_upper_bound ||
         scale_exact_match || zero_point_exact_match;
}

bool DTypeWithConstraints::operator==(const DTypeWithConstraints& o) const {
  return dtype == o.dtype && quant_min_lower_bound == o.quant_min_lower_bound &&
         quant_max_upper_bound == o.quant_max_upper_bound && scale_min_lower_bound == o.scale_min_lower_bound &&
         scale_max_upper_bound == o.scale_max_upper_bound && scale_exact_match == o.scale_exact_match &&
         zero_point_exact_match == o.zero_point_exact_match;
}

bool DTypeConfig::operator==(const DTypeConfig& o) const {
  return input_dtype == o.input_dtype && output_dtype == o.output_dtype && weight_dtype == o.weight_dtype &&
         bias_dtype == o.bias_dtype && is_dynamic == o.is_dynamic;
}

BackendPatternConfig& BackendPatternConfig::set_pattern(const std::string& op) {
  pattern_ = pattern::Pattern::op(op);
  return *this;
}

BackendPatternConfig& BackendPatternConfig::set_pattern(const std::vector<std::string>& ops) {
  TORCH_CHECK(ops.size() == 2 || ops.size() == 3, "a sequence pattern has 2 or 3 ops, got ", ops.size(),
              "; longer patterns need _set_pattern_complex_format");
  pattern_ = pattern::Pattern::sequence(ops);
  return *this;
}

BackendPatternConfig& BackendPatternConfig::_set_pattern_complex_format(const pattern::NestedPattern& nested) {
  pattern_ = pattern::Pattern::from_nested(nested);
  return *this;
}

BackendPatternConfig& BackendPatternConfig::set_pattern(pattern::Pattern pattern) {
  pattern_ = std::move(pattern);
  return *this;
}

BackendPatternConfig& BackendPatternConfig::set_observation_type(ObservationType type) {
  observation_type_ = type;
  return *this;
}

BackendPatternConfig& BackendPatternConfig::add_dtype_config(const DTypeConfig& config) {
  dtype_configs_.push_back(config);
  return *this;
}

BackendPatternConfig& BackendPatternConfig::set_dtype_configs(std::vector<DTypeConfig> configs) {
  dtype_configs_ = std::move(configs);
  return *this;
}

BackendPatternConfig& BackendPatternConfig::set_root_module(const std::string& module_type) {
  root_module_ = module_name(module_type);
  return *this;
}

BackendPatternConfig& BackendPatternConfig::set_qat_module(const std::string& module_type) {
  qat_module_ = module_name(module_type);
  return *this;
}

BackendPatternConfig& BackendPatternConfig::set_reference_quantized_module(const std::string& module_type) {
  reference_quantized_module_ = module_name(module_type);
  return *this;
}

BackendPatternConfig& BackendPatternConfig::set_fused_module(const std::string& module_type) {
  fused_module_ = module_name(module_type);
  return *this;
}

BackendPatternConfig& BackendPatternConfig::set_fuser_method(const std::string& name) {
  fuser_method_ = registered(BackendRegistry::instance().fuser_method(name), name, "fuser method");
  return *this;
}

BackendPatternConfig& BackendPatternConfig::_set_root_node_getter(const std::string& name) {
  root_node_getter_ = registered(BackendRegistry::instance().root_node_getter(name), name, "root node getter");
  return *this;
}

BackendPatternConfig& BackendPatternConfig::_set_extra_inputs_getter(const std::string& name) {
  extra_inputs_getter_ = registered(BackendRegistry::instance().extra_inputs_getter(name), name, "extra inputs getter");
  return *this;
}

BackendPatternConfig& BackendPatternConfig::_set_num_tensor_args_to_observation_type(
    std::map<int64_t, ObservationType> mapping) {
  num_tensor_args_to_observation_type_ = std::move(mapping);
  return *this;
}

BackendPatternConfig& BackendPatternConfig::_set_input_type_to_index(std::map<std::string, int64_t> mapping) {
  input_type_to_index_ = std::move(mapping);
  return *this;
}

BackendPatternConfig& BackendPatternConfig::_set_input_output_observed(bool observed) {
  input_output_observed_ = observed;
  return *this;
}

BackendPatternConfig& BackendPatternConfig::_set_overwrite_output_fake_quantize(const quant::ObserverSpec& spec) {
  overwrite_output_fake_quantize_ = spec;
  return *this;
}

BackendPatternConfig& BackendPatternConfig::_set_overwrite_output_observer(const quant::ObserverSpec& spec) {
  overwrite_output_observer_ = spec;
  return *this;
}

void BackendPatternConfig::validate() const {
  TORCH_CHECK(!pattern_.empty(), "a BackendPatternConfig needs a pattern (set_pattern)");
  if (fused_module_.empty() || !fuser_method_.empty()) return;
  size_t n = pattern_.elements().size();
  TORCH_CHECK(pattern_.is_sequence() && (n == 2 || n == 3), "pattern ", pattern_.str(), ": fused_module ",
              fused_module_, " needs a sequence pattern of 2 or 3 ops to be built from, or a fuser_method");
}

bool BackendPatternConfig::operator==(const BackendPatternConfig& o) const {
  return pattern_ == o.pattern_ && observation_type_ == o.observation_type_ && dtype_configs_ == o.dtype_configs_ &&
         root_module_ == o.root_module_ && qat_module_ == o.qat_module_ &&
         reference_quantized_module_ == o.reference_quantized_module_ && fused_module_ == o.fused_module_ &&
         fuser_method_ == o.fuser_method_ && root_node_getter_ == o.root_node_getter_ &&
         extra_inputs_getter_ == o.extra_inputs_getter_ &&
         num_tensor_args_to_observation_type_ == o.num_tensor_args_to_observation_type_ &&
         input_type_to_index_ == o.input_type_to_index_ && input_output_observed_ == o.input_output_observed_ &&
         overwrite_output_fake_quantize_ == o.overwrite_output_fake_quantize_ &&
         overwrite_output_observer_ == o.overwrite_output_observer_;
}

BackendConfig& BackendConfig::set_name(std::string name) {
  name_ = std::move(name);
  return *this;
}

BackendConfig& BackendConfig::set_backend_pattern_config(BackendPatternConfig config) {
  config.validate();
  auto [it, inserted] = index_.emplace(config.pattern(), configs_.size());
  const auto& elements = config.pattern().elements();
  if (elements.size() == 1 && elements[0].op.kind == pattern::OpKind::kModule) {
    module_index_[elements[0].op.name] = it->second;
  }
  if (inserted) {
    configs_.push_back(std::move(config));
  } else {
    configs_[it->second] = std::move(config);  // PyTorch's dict: same place, new value
  }
  return *this;
}

BackendConfig& BackendConfig::set_backend_pattern_configs(const std::vector<BackendPatternConfig>& configs) {
  for (const BackendPatternConfig& config : configs) set_backend_pattern_config(config);
  return *this;
}

const BackendPatternConfig* BackendConfig::find(const pattern::Pattern& pattern) const {
  auto it = index_.find(pattern);
  return it == index_.end() ? nullptr : &configs_[it->second];
}

const BackendPatternConfig* BackendConfig::module_config(const std::string& type) const {
  auto it = module_index_.find(type);
  return it == module_index_.end() ? nullptr : &configs_[it->second];
}

}  // namespace qfx::backend
