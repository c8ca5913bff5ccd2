// quantize_fx's entry points as pipelines of passes.

#include "qfx/quantize.h"

#include "qfx/backend/builtin_backends.h"
#include "qfx/passes/pass_manager.h"

namespace qfx {
namespace {

passes::PassOptions options_for(const backend::BackendConfig& backend_config, const PrepareCustomConfig& custom) {
  passes::PassOptions options;
  options.backend_config = std::make_shared<backend::BackendConfig>(backend_config);
  options.input_quantized_indexes = custom.input_quantized_indexes;
  options.output_quantized_indexes = custom.output_quantized_indexes;
  return options;
}

}  // namespace

void fuse_fx(ir::GraphModule& model, const backend::BackendConfig& backend_config) {
  passes::PassManager().add("fuse").run(model, options_for(backend_config, {}));
}

void fuse_fx(ir::GraphModule& model) { fuse_fx(model, backend::get_native_backend_config()); }

void prepare_fx(ir::GraphModule& model, const quant::QConfigMapping& qconfig_mapping,
                const backend::BackendConfig& backend_config, const PrepareCustomConfig& prepare_custom_config) {
  passes::PassOptions options = options_for(backend_config, prepare_custom_config);
  options.qconfig_mapping = std::make_shared<quant::QConfigMapping>(qconfig_mapping);
  passes::PassManager().add("fuse").add("insert-observers").run(model, options);
}

void prepare_qat_fx(ir::GraphModule& model, const quant::QConfigMapping& qconfig_mapping,
                    const backend::BackendConfig& backend_config, const PrepareCustomConfig& prepare_custom_config) {
  passes::PassOptions options = options_for(backend_config, prepare_custom_config);
  options.qconfig_mapping = std::make_shared<quant::QConfigMapping>(qconfig_mapping);
  options.is_qat = true;
  model.root().train(true);
  passes::PassManager().add("fuse").add("swap-qat-modules").add("insert-observers").run(model, options);
}

void prepare_fx(ir::GraphModule& model, const quant::QConfigMapping& qconfig_mapping) {
  prepare_fx(model, qconfig_mapping, backend::get_native_backend_config());
}

void convert_to_reference_fx(ir::GraphModule& model, const backend::BackendConfig& backend_config,
                             const PrepareCustomConfig& prepare_custom_config) {
  passes::PassManager().add("convert-to-reference").run(model, options_for(backend_config, prepare_custom_config));
}

void convert_to_reference_fx(ir::GraphModule& model) {
  convert_to_reference_fx(model, backend::get_native_backend_config());
}

void convert_fx(ir::GraphModule& model, const backend::BackendConfig& backend_config,
                const PrepareCustomConfig& prepare_custom_config) {
  passes::PassManager()
      .add("convert-to-reference")
      .add("lower-to-native")
      .run(model, options_for(backend_config, prepare_custom_config));
}

void convert_fx(ir::GraphModule& model) { convert_fx(model, backend::get_native_backend_config()); }

}  // namespace qfx
