// The BackendConfig tutorial's flow in C++: a custom backend built with the
// BackendConfig builder, the tutorial's QConfigMapping, prepare_fx,
// calibration, convert_fx, the converted code, and an int8 TorchScript file.
//
//   tutorial_flow MODEL.pt OUT.pt
// MODEL.pt: the tutorial's MyModel traced (input [1, 3, 10, 10]).

#include "qfx/backend/backend_config.h"
#include "qfx/io/torchscript_export.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/interpreter.h"
#include "qfx/quant/qconfig_json.h"
#include "qfx/quantize.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <iostream>

using namespace qfx::backend;

/// The tutorial's backend: Linear, and Conv2d + ReLU fused, quint8 activations
/// with scale >= 2^-12, qint8 weights.
BackendConfig my_backend() {
  DTypeWithConstraints quint8_with_constraints = c10::kQUInt8;
  quint8_with_constraints.quant_min_lower_bound = 0;
  quint8_with_constraints.quant_max_upper_bound = 255;
  quint8_with_constraints.scale_min_lower_bound = std::pow(2.0, -12);
  DTypeConfig weighted_int8{quint8_with_constraints, quint8_with_constraints, c10::kQInt8, c10::kFloat};
  return BackendConfig("my_backend")
      .set_backend_pattern_config(BackendPatternConfig()
                                      .set_pattern("torch.nn.Linear")
                                      .set_observation_type(ObservationType::OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT)
                                      .add_dtype_config(weighted_int8)
                                      .set_root_module("torch.nn.Linear")
                                      .set_qat_module("torch.nn.qat.Linear")
                                      .set_reference_quantized_module("torch.ao.nn.quantized.reference.Linear"))
      .set_backend_pattern_config(BackendPatternConfig()
                                      .set_pattern({"torch.nn.Conv2d", "torch.nn.ReLU"})
                                      .set_fused_module("torch.ao.nn.intrinsic.ConvReLU2d"))
      .set_backend_pattern_config(BackendPatternConfig()
                                      .set_pattern("torch.ao.nn.intrinsic.ConvReLU2d")
                                      .set_observation_type(ObservationType::OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT)
                                      .add_dtype_config(weighted_int8)
                                      .set_root_module("torch.nn.Conv2d")
                                      .set_qat_module("torch.ao.nn.intrinsic.qat.ConvReLU2d")
                                      .set_reference_quantized_module("torch.ao.nn.quantized.reference.Conv2d"));
}

/// The tutorial's QConfigMapping (quant_max 127 and eps 2^-12 meet the backend's constraints).
qfx::quant::QConfigMapping my_qconfig_mapping() {
  nlohmann::json qconfig = {
      {"activation",
       {{"type", "MinMaxObserver"}, {"args", {{"quant_min", 0}, {"quant_max", 127}, {"eps", std::pow(2.0, -12)}}}}},
      {"weight",
       {{"type", "MinMaxObserver"}, {"args", {{"dtype", "torch.qint8"}, {"qscheme", "torch.per_tensor_symmetric"}}}}}};
  nlohmann::json mapping = {{"object_type", nlohmann::json::array()}};
  for (const char* type : {"torch.nn.Linear", "torch.nn.Conv2d", "torch.nn.BatchNorm2d", "torch.nn.ReLU"}) {
    mapping["object_type"].push_back({type, qconfig});
  }
  return qfx::quant::qconfig_mapping_from_json(mapping);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: tutorial_flow MODEL.pt OUT.pt\n";
    return 2;
  }
  try {
    auto model = qfx::io::import_torchscript(argv[1]);
    BackendConfig backend = my_backend();
    qfx::prepare_fx(*model, my_qconfig_mapping(), backend);
    qfx::ir::Interpreter calibrate(*model);
    at::manual_seed(0);
    for (int i = 0; i < 4; ++i) calibrate.run({at::rand({1, 3, 10, 10})});
    qfx::convert_fx(*model, backend);
    std::cout << model->code();
    qfx::io::export_torchscript(*model, argv[2]);
  } catch (const c10::Error& e) {
    std::cerr << "tutorial_flow: error: " << e.what_without_backtrace() << "\n";
    return 1;
  }
  return 0;
}
