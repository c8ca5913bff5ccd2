// The table of passes: name, summary, function. `qfx opt --passes` and the
// PassManager look passes up here.

#include "qfx/passes/pass.h"
#include "util/json_path.h"

#include "qfx/backend/builtin_backends.h"

#include <c10/util/Exception.h>

namespace qfx::passes {

const backend::BackendConfig& BackendOption::backend() const {
  if (backend_config) return *backend_config;
  static const backend::BackendConfig native = backend::get_native_backend_config();
  return native;
}

FuseOptions FuseOptions::of(const PassOptions& p) {
  FuseOptions o;
  o.backend_config = p.backend_config;
  o.is_qat = p.is_qat;
  o.explain = p.explain;
  o.jobs = p.jobs;
  return o;
}

SwapQatModulesOptions SwapQatModulesOptions::of(const PassOptions& p) {
  SwapQatModulesOptions o;
  o.backend_config = p.backend_config;
  o.qconfig_mapping = p.qconfig_mapping;
  return o;
}

InsertObserversOptions InsertObserversOptions::of(const PassOptions& p) {
  InsertObserversOptions o;
  o.backend_config = p.backend_config;
  o.qconfig_mapping = p.qconfig_mapping;
  o.is_qat = p.is_qat;
  o.input_quantized_indexes = p.input_quantized_indexes;
  o.output_quantized_indexes = p.output_quantized_indexes;
  o.prepare_custom_config = p.prepare_custom_config;
  o.is_standalone = p.is_standalone;
  o.explain = p.explain;
  return o;
}

ConvertToReferenceOptions ConvertToReferenceOptions::of(const PassOptions& p) {
  ConvertToReferenceOptions o;
  o.backend_config = p.backend_config;
  o.input_quantized_indexes = p.input_quantized_indexes;
  o.output_quantized_indexes = p.output_quantized_indexes;
  o.convert_custom_config = p.convert_custom_config;
  o.jobs = p.jobs;
  return o;
}

void CalibratedPassOptions::take(const PassOptions& p) {
  backend_config = p.backend_config;
  qconfig_mapping = p.qconfig_mapping;
  calibration_inputs = p.calibration_inputs;
  explain = p.explain;
}

void CalibratedPassOptions::check(const char* pass) const {
  TORCH_CHECK(qconfig_mapping != nullptr, pass, " needs a QConfigMapping (its weight observers)");
  TORCH_CHECK(calibration_inputs != nullptr && !calibration_inputs->empty(), pass, " needs calibration data");
}

CorrectBiasOptions CorrectBiasOptions::of(const PassOptions& p) {
  CorrectBiasOptions o;
  o.take(p);
  return o;
}

AdaroundOptions AdaroundOptions::of(const PassOptions& p) {
  AdaroundOptions o;
  o.take(p);
  o.iterations = p.adaround_iterations;
  return o;
}

LowerToNativeOptions LowerToNativeOptions::of(const PassOptions& p) { return {p.explain, p.jobs}; }

namespace {

/// The registry's form of a pass that takes options `O`.
template <typename O, bool (*Pass)(ir::GraphModule&, const O&)>
bool with_own_options(ir::GraphModule& gm, const PassOptions& pipeline) {
  return Pass(gm, O::of(pipeline));
}

bool dce_pass(ir::GraphModule& gm, const PassOptions&) { return dce(gm); }

}  // namespace

const std::vector<PassInfo>& pass_registry() {
  static const std::vector<PassInfo> passes = {
      {"fuse", "fuse the BackendConfig's fusion patterns into fused modules (fuse_fx)",
       &with_own_options<FuseOptions, fuse>},
      {"equalize", "cross-layer equalization of consecutive conv/linear layers (through ReLU)",
       &with_own_options<EqualizeOptions, equalize>},
      {"adaround", "learned rounding of quantized weights (up or down) minimizing each layer's output error",
       &with_own_options<AdaroundOptions, adaround>},
      {"correct-bias", "empirical bias correction of quantized weights' mean shift, from calibration data",
       &with_own_options<CorrectBiasOptions, correct_bias>},
      {"swap-qat-modules", "modules with a qconfig become the BackendConfig's QAT modules (prepare_qat_fx)",
       &with_own_options<SwapQatModulesOptions, swap_qat_modules>},
      {"insert-observers", "insert observers where the QConfigMapping and the BackendConfig allow (prepare_fx)",
       &with_own_options<InsertObserversOptions, insert_observers>},
      {"convert-to-reference", "observers to quantize/dequantize, weighted modules to reference modules",
       &with_own_options<ConvertToReferenceOptions, convert_to_reference>},
      {"lower-to-native", "reference patterns to quantized modules and ops with prepacked weights (convert_fx)",
       &with_own_options<LowerToNativeOptions, lower_to_native>},
      {"dce", "remove nodes whose values are not used", &dce_pass},
  };
  return passes;
}

const PassInfo& find_pass(const std::string& name) {
  std::string known;
  for (const PassInfo& info : pass_registry()) {
    if (name == info.name) return info;
    known += (known.empty() ? "" : ", ") + std::string(info.name);
  }
  TORCH_CHECK(false, "unknown pass ", qfx::detail::echoed(name), " (passes: ", known, ")");
}

}  // namespace qfx::passes
