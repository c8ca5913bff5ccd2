#pragma once
/// \file
/// QConfig (torch.ao.quantization.QConfig): how to observe a node's activation
/// and weight, as two ObserverSpecs; `QConfigAny` adds None ("leave float").
/// Also PyTorch 1.13's preset observers and qconfigs, with the same classes
/// and arguments, so that they compare equal to PyTorch's `to_dict()`.

#include "qfx/quant/observer_spec.h"

#include <optional>
#include <string>
#include <vector>

namespace qfx::quant {

/// Observer specs for a node's activation (input/output) and weight.
struct QConfig {
  ObserverSpec activation;
  ObserverSpec weight;

  bool operator==(const QConfig& other) const { return activation == other.activation && weight == other.weight; }
  bool operator!=(const QConfig& other) const { return !(*this == other); }
};

/// A QConfig, or nullopt for PyTorch's None: the node stays float.
using QConfigAny = std::optional<QConfig>;

/// PyTorch's qconfig_equals.
inline bool qconfig_equals(const QConfigAny& a, const QConfigAny& b) { return a == b; }

/// The dtypes a QConfig quantizes to, read from fresh observer instances as
/// PyTorch's get_qconfig_dtypes does.
struct QConfigDtypes {
  c10::ScalarType activation;
  c10::ScalarType weight;
  /// Dynamic quantization's run-time activation dtype, else nullopt.
  c10::optional<c10::ScalarType> compute;
};
QConfigDtypes qconfig_dtypes(const QConfig& qconfig);

/// True when activations are quantized dynamically (a quantized compute dtype).
bool activation_is_dynamically_quantized(const QConfig& qconfig);
/// True when activations are quantized statically (quint8, qint8, float16).
bool activation_is_statically_quantized(const QConfig& qconfig);
/// ReuseInputObserver activations with a NoopObserver weight (reshape & co).
bool is_reuse_input_qconfig(const QConfigAny& qconfig);

/// Named observer and fake-quantize specs of torch.ao.quantization
/// (`default_observer`, `default_weight_observer`, `default_fake_quant`, ...).
std::optional<ObserverSpec> observer_preset(const std::string& name);
std::vector<std::string> observer_preset_names();

/// `get_default_qconfig(backend)`: backend is fbgemm, x86, qnnpack or onednn
/// (anything else gives `default_qconfig`, as in PyTorch).
QConfig get_default_qconfig(const std::string& backend = "fbgemm");
/// `get_default_qat_qconfig(backend, version)`, version 0 or 1.
QConfig get_default_qat_qconfig(const std::string& backend = "fbgemm", int version = 1);

/// A qconfig by name: the module-level presets (`default_dynamic_qconfig`,
/// `float16_static_qconfig`, ...), or `default:BACKEND` / `qat:BACKEND`.
std::optional<QConfig> qconfig_preset(const std::string& name);
std::vector<std::string> qconfig_preset_names();

}  // namespace qfx::quant
