// The quantization pipeline of qfx/pipeline.h: load by format, improve,
// prepare, calibrate, convert.

#include "qfx/pipeline.h"

#include "qfx/backend/builtin_backends.h"
#include "qfx/io/model_file.h"
#include "qfx/ir/interpreter.h"
#include "qfx/ir/module_registry.h"
#include "qfx/passes/pass_manager.h"
#include "qfx/quantize.h"

#include <memory>

namespace qfx {
namespace {

/// The backend config `options` names; the native one when it names none.
const backend::BackendConfig& backend_of(const QuantizeOptions& options) {
  static const backend::BackendConfig native = backend::get_native_backend_config();
  return options.backend_config.configs().empty() ? native : options.backend_config;
}

/// Post-training quantization calibrates the model as it is: a batch norm or
/// dropout in training mode (a model saved before model.eval()) would
/// compute as in training, and fusion refuses it.
void check_eval_mode(const ir::GraphModule& model, const std::string& path) {
  for (const auto& item : model.root().named_modules("", /*include_self=*/false)) {
    std::string type = ir::module_type_name(*item.value());
    bool differs = type.find("BatchNorm") != std::string::npos || type.find("Dropout") != std::string::npos;
    TORCH_CHECK(!differs || !item.value()->is_training(), "model '", path, "' was saved in training mode (module '",
                item.key(), "', ", type,
                ", has training=True): save it after model.eval(), or fine-tune it with quantization-aware "
                "training (--qconfig qat)");
  }
}

}  // namespace

std::unique_ptr<ir::GraphModule> load_for_quantization(const std::string& path, const QuantizeOptions& options) {
  auto model = io::load_model(path, import_options(options.prepare_custom_config));
  if (!options.qat) check_eval_mode(*model, path);
  return model;
}

void improve_float_model(ir::GraphModule& model, const QuantizeOptions& options, const Batches& calibration) {
  if (!options.equalize && !options.correct_bias && !options.adaround) return;
  passes::PassOptions pass_options;
  pass_options.backend_config =
      std::shared_ptr<const backend::BackendConfig>(std::shared_ptr<const void>(), &backend_of(options));
  pass_options.qconfig_mapping = std::make_shared<quant::QConfigMapping>(options.qconfig_mapping);
  pass_options.adaround_iterations = options.adaround_iterations;
  if (options.correct_bias || options.adaround) {
    TORCH_CHECK(calibration, "bias correction and AdaRound need calibration data");
    auto inputs = std::make_shared<std::vector<std::vector<c10::IValue>>>();
    calibration([&](const Batch& batch) { inputs->push_back(batch); });
    pass_options.calibration_inputs = inputs;
  }
  passes::PassManager pipeline;
  pipeline.add("fuse");
  if (options.equalize) pipeline.add("equalize");
  if (options.adaround) pipeline.add("adaround");
  if (options.correct_bias) pipeline.add("correct-bias");
  pipeline.run(model, pass_options);
}

void prepare(ir::GraphModule& model, const QuantizeOptions& options) {
  if (!options.qat) {
    return prepare_fx(model, options.qconfig_mapping, backend_of(options), options.prepare_custom_config);
  }
  prepare_qat_fx(model, options.qconfig_mapping, backend_of(options), options.prepare_custom_config);
  model.root().train(false);
}

void calibrate(ir::GraphModule& model, const Batches& calibration) {
  ir::Interpreter interpreter(model);
  calibration([&](const Batch& batch) { interpreter.run(batch); });
}

void convert(ir::GraphModule& model, const QuantizeOptions& options) {
  if (options.reference) {
    return convert_to_reference_fx(model, backend_of(options), options.prepare_custom_config,
                                   options.convert_custom_config);
  }
  convert_fx(model, backend_of(options), options.prepare_custom_config, options.convert_custom_config);
}

std::unique_ptr<ir::GraphModule> quantize_model(const std::string& path, const QuantizeOptions& options,
                                                const Batches& calibration) {
  auto model = load_for_quantization(path, options);
  improve_float_model(*model, options, calibration);
  prepare(*model, options);
  if (calibration) calibrate(*model, calibration);
  convert(*model, options);
  return model;
}

Batches batches_of(std::vector<Batch> inputs) {
  return [inputs = std::move(inputs)](const std::function<void(const Batch&)>& each) {
    for (const Batch& batch : inputs) each(batch);
  };
}

Batches data_batches(const std::string& path, const io::DataOptions& options) {
  return [path, options](const std::function<void(const Batch&)>& each) {
    auto source = io::open_data(path, options);
    while (auto batch = source->next()) each(batch->inputs);
  };
}

}  // namespace qfx
