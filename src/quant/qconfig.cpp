// QConfig helpers and PyTorch 1.13's presets (observer.py, fake_quantize.py,
// qconfig.py), as tables: each row is the preset's name and its classes and
// keyword arguments exactly as PyTorch writes them.

#include "qfx/quant/qconfig.h"

#include <c10/util/Exception.h>

#include <functional>
#include <map>

namespace qfx::quant {
namespace {

using c10::kPerChannelAffineFloatQParams;
using c10::kPerChannelSymmetric;
using c10::kPerTensorAffine;
using c10::kPerTensorSymmetric;
using c10::kQInt8;
using c10::kQUInt4x2;
using c10::kQUInt8;

ObserverSpec spec(const char* type, SpecArgs args = {}) { return ObserverSpec(type, std::move(args)); }

constexpr double kEps12 = 0.000244140625;  // 2 ** -12

using SpecRows = std::map<std::string, std::function<ObserverSpec()>>;

// A table, one row per line (not reflowed by clang-format).
// clang-format off
const SpecRows& observer_rows() {
  static const SpecRows kRows = {
      // observer.py
      {"default_observer", [] { return spec("MinMaxObserver", {{"quant_min", 0}, {"quant_max", 127}}); }},
      {"default_placeholder_observer", [] { return spec("PlaceholderObserver"); }},
      {"default_debug_observer", [] { return spec("RecordingObserver"); }},
      {"default_weight_observer",
       [] { return spec("MinMaxObserver", {{"dtype", kQInt8}, {"qscheme", kPerTensorSymmetric}}); }},
      {"weight_observer_range_neg_127_to_127",
       [] {
         return spec("MinMaxObserver", {{"dtype", kQInt8}, {"qscheme", kPerTensorSymmetric}, {"quant_min", -127},
                                        {"quant_max", 127}, {"eps", kEps12}});
       }},
      {"default_histogram_observer", [] { return spec("HistogramObserver", {{"quant_min", 0}, {"quant_max", 127}}); }},
      {"default_per_channel_weight_observer",
       [] { return spec("PerChannelMinMaxObserver", {{"dtype", kQInt8}, {"qscheme", kPerChannelSymmetric}}); }},
      {"per_channel_weight_observer_range_neg_127_to_127",
       [] {
         return spec("PerChannelMinMaxObserver", {{"dtype", kQInt8}, {"qscheme", kPerChannelSymmetric},
                                                  {"quant_min", -127}, {"quant_max", 127}, {"eps", kEps12}});
       }},
      {"default_dynamic_quant_observer",
       [] { return spec("PlaceholderObserver", {{"dtype", kQUInt8}, {"compute_dtype", kQUInt8}}); }},
      {"default_float_qparams_observer",
       [] {
         return spec("PerChannelMinMaxObserver",
                     {{"dtype", kQUInt8}, {"qscheme", kPerChannelAffineFloatQParams}, {"ch_axis", 0}});
       }},
      {"default_float_qparams_observer_4bit",
       [] {
         return spec("PerChannelMinMaxObserver",
                     {{"dtype", kQUInt4x2}, {"qscheme", kPerChannelAffineFloatQParams}, {"ch_axis", 0}});
       }},
      {"default_fixed_qparams_range_neg1to1_observer",
       [] {
         return spec("FixedQParamsObserver", {{"scale", 2.0 / 256.0}, {"zero_point", 128}, {"dtype", kQUInt8},
                                              {"quant_min", 0}, {"quant_max", 255}});
       }},
      {"default_fixed_qparams_range_0to1_observer",
       [] {
         return spec("FixedQParamsObserver", {{"scale", 1.0 / 256.0}, {"zero_point", 0}, {"dtype", kQUInt8},
                                              {"quant_min", 0}, {"quant_max", 255}});
       }},
      {"default_reuse_input_observer", [] { return spec("ReuseInputObserver"); }},
  };
  return kRows;
}
// clang-format on

// A table, one row per line (not reflowed by clang-format).
// clang-format off
const SpecRows& fake_quant_rows() {
  static const SpecRows kRows = {
      // fake_quantize.py
      {"default_fake_quant",
       [] {
         return spec("FakeQuantize", {{"observer", spec("MovingAverageMinMaxObserver")}, {"quant_min", 0},
                                      {"quant_max", 255}, {"dtype", kQUInt8}, {"qscheme", kPerTensorAffine},
                                      {"reduce_range", true}});
       }},
      {"default_weight_fake_quant",
       [] {
         return spec("FakeQuantize", {{"observer", spec("MovingAverageMinMaxObserver")}, {"quant_min", -128},
                                      {"quant_max", 127}, {"dtype", kQInt8}, {"qscheme", kPerTensorSymmetric},
                                      {"reduce_range", false}});
       }},
      {"default_dynamic_fake_quant",
       [] {
         return spec("FakeQuantize", {{"observer", spec("MovingAverageMinMaxObserver")}, {"quant_min", 0},
                                      {"quant_max", 255}, {"dtype", kQUInt8}, {"averaging_constant", 1}});
       }},
      {"default_fixed_qparams_range_neg1to1_fake_quant",
       [] {
         return spec("FixedQParamsFakeQuantize",
                     {{"observer", *observer_preset("default_fixed_qparams_range_neg1to1_observer")}});
       }},
      {"default_fixed_qparams_range_0to1_fake_quant",
       [] {
         return spec("FixedQParamsFakeQuantize",
                     {{"observer", *observer_preset("default_fixed_qparams_range_0to1_observer")}});
       }},
      {"default_per_channel_weight_fake_quant",
       [] {
         return spec("FakeQuantize", {{"observer", spec("MovingAveragePerChannelMinMaxObserver")}, {"quant_min", -128},
                                      {"quant_max", 127}, {"dtype", kQInt8}, {"qscheme", kPerChannelSymmetric},
                                      {"reduce_range", false}, {"ch_axis", 0}});
       }},
      {"default_embedding_fake_quant",
       [] {
         return spec("FakeQuantize", {{"observer", spec("MovingAveragePerChannelMinMaxObserver")},
                                      {"qscheme", kPerChannelAffineFloatQParams}, {"dtype", kQUInt8},
                                      {"quant_min", 0}, {"quant_max", 255}, {"ch_axis", 0},
                                      {"averaging_constant", 1}});
       }},
      {"default_embedding_fake_quant_4bit",
       [] {
         return spec("FakeQuantize", {{"observer", spec("MovingAveragePerChannelMinMaxObserver")},
                                      {"qscheme", kPerChannelAffineFloatQParams}, {"ch_axis", 0},
                                      {"dtype", kQUInt4x2}, {"averaging_constant", 1}});
       }},
      {"default_histogram_fake_quant",
       [] {
         return spec("FakeQuantize", {{"observer", spec("HistogramObserver")}, {"quant_min", 0}, {"quant_max", 255},
                                      {"dtype", kQUInt8}, {"qscheme", kPerTensorAffine}, {"reduce_range", true}});
       }},
      {"default_fused_act_fake_quant",
       [] {
         return spec("FusedMovingAvgObsFakeQuantize", {{"observer", spec("MovingAverageMinMaxObserver")},
                                                       {"quant_min", 0}, {"quant_max", 255}, {"dtype", kQUInt8}});
       }},
      {"default_fused_wt_fake_quant",
       [] {
         return spec("FusedMovingAvgObsFakeQuantize",
                     {{"observer", spec("MovingAverageMinMaxObserver")}, {"quant_min", -128}, {"quant_max", 127},
                      {"dtype", kQInt8}, {"qscheme", kPerTensorSymmetric}});
       }},
      {"default_fused_per_channel_wt_fake_quant",
       [] {
         return spec("FusedMovingAvgObsFakeQuantize",
                     {{"observer", spec("MovingAveragePerChannelMinMaxObserver")}, {"quant_min", -128},
                      {"quant_max", 127}, {"dtype", kQInt8}, {"qscheme", kPerChannelSymmetric}});
       }},
      {"fused_wt_fake_quant_range_neg_127_to_127",
       [] {
         return spec("FusedMovingAvgObsFakeQuantize",
                     {{"observer", spec("MovingAverageMinMaxObserver")}, {"quant_min", -127}, {"quant_max", 127},
                      {"dtype", kQInt8}, {"qscheme", kPerTensorSymmetric}, {"eps", kEps12}});
       }},
      {"fused_per_channel_wt_fake_quant_range_neg_127_to_127",
       [] {
         return spec("FusedMovingAvgObsFakeQuantize",
                     {{"observer", spec("MovingAveragePerChannelMinMaxObserver")}, {"quant_min", -127},
                      {"quant_max", 127}, {"dtype", kQInt8}, {"qscheme", kPerChannelSymmetric}, {"eps", kEps12}});
       }},
  };
  return kRows;
}
// clang-format on

ObserverSpec preset(const char* name) { return *observer_preset(name); }

QConfig qconfig(const char* activation, const char* weight) { return {preset(activation), preset(weight)}; }

// qnnpack's symmetric activation observer (default_symmetric_qnnpack_qconfig).
ObserverSpec symmetric_qnnpack_activation() {
  return spec("HistogramObserver", {{"dtype", kQInt8}, {"reduce_range", false}, {"eps", kEps12}});
}

ObserverSpec symmetric_qnnpack_qat_activation() {
  return spec("FusedMovingAvgObsFakeQuantize", {{"observer", spec("MovingAverageMinMaxObserver")},
                                                {"quant_min", -128},
                                                {"quant_max", 127},
                                                {"dtype", kQInt8},
                                                {"reduce_range", false},
                                                {"eps", kEps12}});
}

using QConfigRows = std::map<std::string, std::function<QConfig()>>;

// A table, one row per line (not reflowed by clang-format).
// clang-format off
const QConfigRows& qconfig_rows() {
  static const QConfigRows kRows = {
      {"default_qconfig", [] { return qconfig("default_observer", "default_weight_observer"); }},
      {"default_debug_qconfig", [] { return qconfig("default_debug_observer", "default_weight_observer"); }},
      {"default_per_channel_qconfig",
       [] { return qconfig("default_observer", "default_per_channel_weight_observer"); }},
      {"default_dynamic_qconfig", [] { return qconfig("default_dynamic_quant_observer", "default_weight_observer"); }},
      {"float16_dynamic_qconfig",
       [] {
         return QConfig{spec("PlaceholderObserver", {{"dtype", c10::kHalf}, {"compute_dtype", c10::kHalf}}),
                        spec("PlaceholderObserver", {{"dtype", c10::kHalf}})};
       }},
      {"float16_static_qconfig",
       [] {
         return QConfig{spec("PlaceholderObserver", {{"dtype", c10::kHalf}}),
                        spec("PlaceholderObserver", {{"dtype", c10::kHalf}})};
       }},
      {"per_channel_dynamic_qconfig",
       [] { return qconfig("default_dynamic_quant_observer", "default_per_channel_weight_observer"); }},
      {"float_qparams_weight_only_qconfig",
       [] { return qconfig("default_placeholder_observer", "default_float_qparams_observer"); }},
      {"float_qparams_weight_only_qconfig_4bit",
       [] { return qconfig("default_placeholder_observer", "default_float_qparams_observer_4bit"); }},
      {"default_qat_qconfig", [] { return qconfig("default_fake_quant", "default_weight_fake_quant"); }},
      {"default_dynamic_qat_qconfig", [] { return qconfig("default_dynamic_fake_quant", "default_weight_fake_quant"); }},
      {"default_qat_qconfig_v2", [] { return qconfig("default_fused_act_fake_quant", "default_fused_wt_fake_quant"); }},
      {"default_reuse_input_qconfig", [] { return QConfig{preset("default_reuse_input_observer"), spec("NoopObserver")}; }},
      {"default_symmetric_qnnpack_qconfig",
       [] { return QConfig{symmetric_qnnpack_activation(), preset("weight_observer_range_neg_127_to_127")}; }},
      {"default_per_channel_symmetric_qnnpack_qconfig",
       [] {
         return QConfig{symmetric_qnnpack_activation(), preset("per_channel_weight_observer_range_neg_127_to_127")};
       }},
      {"default_symmetric_qnnpack_qat_qconfig",
       [] { return QConfig{symmetric_qnnpack_qat_activation(), preset("fused_wt_fake_quant_range_neg_127_to_127")}; }},
      {"default_per_channel_symmetric_qnnpack_qat_qconfig",
       [] {
         return QConfig{symmetric_qnnpack_qat_activation(),
                        preset("fused_per_channel_wt_fake_quant_range_neg_127_to_127")};
       }},
      {"default_embedding_qat_qconfig",
       [] { return QConfig{spec("NoopObserver", {{"dtype", c10::kFloat}}), preset("default_embedding_fake_quant")}; }},
      {"default_embedding_qat_qconfig_4bit",
       [] {
         return QConfig{spec("NoopObserver", {{"dtype", c10::kFloat}}), preset("default_embedding_fake_quant_4bit")};
       }},
  };
  return kRows;
}
// clang-format on

template <typename Rows>
std::vector<std::string> keys(const Rows& rows) {
  std::vector<std::string> names;
  for (const auto& row : rows) names.push_back(row.first);
  return names;
}

}  // namespace

// The dtypes come from instances, as in PyTorch: shared ones, made once per
// spec (a fresh HistogramObserver per node costs more than the pass).
QConfigDtypes qconfig_dtypes(const QConfig& qconfig) {
  auto activation = qconfig.activation.prototype();
  auto weight = qconfig.weight.prototype();
  return {activation->dtype(), weight->dtype(), activation->compute_dtype()};
}

bool activation_is_dynamically_quantized(const QConfig& qconfig) {
  auto compute = qconfig_dtypes(qconfig).compute;
  return compute && (*compute == kQUInt8 || *compute == kQInt8 || *compute == c10::kHalf);
}

bool activation_is_statically_quantized(const QConfig& qconfig) {
  c10::ScalarType dtype = qconfig_dtypes(qconfig).activation;
  bool quantized = dtype == kQUInt8 || dtype == kQInt8 || dtype == c10::kHalf;
  return quantized && !activation_is_dynamically_quantized(qconfig);
}

bool is_reuse_input_qconfig(const QConfigAny& qconfig) {
  return qconfig && qconfig->activation.short_type() == "ReuseInputObserver" &&
         qconfig->weight.short_type() == "NoopObserver";
}

std::optional<ObserverSpec> observer_preset(const std::string& name) {
  for (const SpecRows* rows : {&observer_rows(), &fake_quant_rows()}) {
    auto it = rows->find(name);
    if (it != rows->end()) return it->second();
  }
  return std::nullopt;
}

std::vector<std::string> observer_preset_names() {
  auto names = keys(observer_rows());
  auto more = keys(fake_quant_rows());
  names.insert(names.end(), more.begin(), more.end());
  return names;
}

QConfig get_default_qconfig(const std::string& backend) {
  ObserverSpec per_channel = preset("default_per_channel_weight_observer");
  if (backend == "fbgemm" || backend == "x86") {
    return {spec("HistogramObserver", {{"reduce_range", true}}), per_channel};
  }
  if (backend == "qnnpack")
    return {spec("HistogramObserver", {{"reduce_range", false}}), preset("default_weight_observer")};
  if (backend == "onednn") return {spec("HistogramObserver", {{"reduce_range", false}}), per_channel};
  return *qconfig_preset("default_qconfig");
}

QConfig get_default_qat_qconfig(const std::string& backend, int version) {
  TORCH_CHECK(version == 0 || version == 1, "get_default_qat_qconfig: version must be 0 or 1, got ", version);
  bool reduce = backend == "fbgemm" || backend == "x86";
  bool known = reduce || backend == "qnnpack" || backend == "onednn";
  if (!known) return *qconfig_preset(version == 0 ? "default_qat_qconfig" : "default_qat_qconfig_v2");
  SpecArgs args{{"observer", spec("MovingAverageMinMaxObserver")}, {"quant_min", 0}, {"quant_max", 255}};
  if (backend != "onednn") args.emplace_back("reduce_range", reduce);
  if (version == 0) {
    const char* weight = backend == "qnnpack" ? "default_weight_fake_quant" : "default_per_channel_weight_fake_quant";
    return {spec("FakeQuantize", args), preset(weight)};
  }
  const char* weight = backend == "qnnpack" ? "default_fused_wt_fake_quant" : "default_fused_per_channel_wt_fake_quant";
  return {spec("FusedMovingAvgObsFakeQuantize", args), preset(weight)};
}

std::optional<QConfig> qconfig_preset(const std::string& name) {
  auto it = qconfig_rows().find(name);
  if (it != qconfig_rows().end()) return it->second();
  size_t colon = name.find(':');
  if (colon == std::string::npos) return std::nullopt;
  std::string kind = name.substr(0, colon);
  std::string backend = name.substr(colon + 1);
  if (kind == "default") return get_default_qconfig(backend);
  if (kind == "qat") return get_default_qat_qconfig(backend);
  return std::nullopt;
}

std::vector<std::string> qconfig_preset_names() {
  auto names = keys(qconfig_rows());
  for (const char* backend : {"fbgemm", "x86", "qnnpack", "onednn"}) {
    names.push_back(std::string("default:") + backend);
    names.push_back(std::string("qat:") + backend);
  }
  return names;
}

}  // namespace qfx::quant
