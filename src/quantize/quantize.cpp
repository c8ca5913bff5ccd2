// quantize_fx's entry points as pipelines of passes.

#include "qfx/quantize.h"
#include "util/json_path.h"

#include "qfx/backend/builtin_backends.h"
#include "qfx/ir/module_registry.h"
#include "qfx/nn/opaque_modules.h"
#include "qfx/passes/pass_manager.h"

#include <algorithm>

namespace qfx {
namespace {

/// The passes' options; they point at `backend_config` without copying it
/// (a few hundred pattern configs), as they are used during the call only.
passes::PassOptions options_for(const backend::BackendConfig& backend_config, const PrepareCustomConfig& custom) {
  passes::PassOptions options;
  options.backend_config =
      std::shared_ptr<const backend::BackendConfig>(std::shared_ptr<const void>(), &backend_config);
  options.input_quantized_indexes = custom.input_quantized_indexes;
  options.output_quantized_indexes = custom.output_quantized_indexes;
  options.prepare_custom_config = std::make_shared<PrepareCustomConfig>(custom);
  return options;
}

/// Keeps the preserved attributes `names` (PyTorch's
/// attach_preserved_attributes_to_model): the others are dropped, a missing
/// one is an error.
void keep_preserved(ir::GraphModule& model, const std::vector<std::string>& names, const char* step) {
  auto& preserved = model.preserved_attributes();
  for (const std::string& name : names) {
    TORCH_CHECK(preserved.count(name) > 0, step, ": preserved attribute '", name,
                "' is not on the model (import it with qfx::import_options of a config that preserves it)");
  }
  for (auto it = preserved.begin(); it != preserved.end();) {
    it = std::find(names.begin(), names.end(), it->first) == names.end() ? preserved.erase(it) : std::next(it);
  }
}

/// Whether a call_module node calls the module at `path` (a leaf: one the
/// importer keeps whole, as FX's tracer keeps a non-traceable module).
bool is_called(const ir::GraphModule& model, const std::string& path) {
  for (const ir::Node* node : model.graph().nodes()) {
    if (node->op() == ir::Opcode::kCallModule && node->target() == path) return true;
  }
  return false;
}

}  // namespace

void check_custom_config_modules(const ir::GraphModule& model, const PrepareCustomConfig& config,
                                 const std::string& where, const std::string& why_not_called) {
  auto check = [&](const std::string& path, bool nested, const char* what) {
    std::shared_ptr<torch::nn::Module> module = model.find_submodule(path);
    TORCH_CHECK(module != nullptr, where, ": the PrepareCustomConfig names ", what, " ", qfx::detail::echoed(path),
                ", which is not a module of the model");
    bool kept = nested ? dynamic_cast<nn::NestedGraphModuleImpl*>(module.get()) != nullptr
                       : dynamic_cast<nn::ScriptModuleImpl*>(module.get()) != nullptr || is_called(model, path);
    TORCH_CHECK(kept, where, ": the PrepareCustomConfig names ", what, " ", qfx::detail::echoed(path), ", which ",
                why_not_called);
  };
  for (const auto& entry : config.standalone_module_names) check(entry.first, true, "the standalone module");
  for (const std::string& path : config.non_traceable_module_names) check(path, false, "the non-traceable module");
}

io::ImportOptions import_options(const PrepareCustomConfig& config) {
  io::ImportOptions options;
  for (const auto& entry : config.standalone_module_names) options.nested_module_names.push_back(entry.first);
  for (const auto& entry : config.standalone_module_classes) options.nested_module_classes.push_back(entry.first);
  options.script_module_names = config.non_traceable_module_names;
  options.script_module_classes = config.non_traceable_module_classes;
  for (const auto& [quant_type, classes] : config.float_to_observed_custom_module_classes) {
    for (const auto& entry : classes) {
      // a registered module kind (torch.nn.LSTM) is imported as such anyway
      if (ir::ModuleRegistry::instance().find(entry.first) == nullptr) {
        options.script_module_classes.push_back(entry.first);
      }
    }
  }
  options.preserved_attributes = config.preserved_attributes;
  return options;
}

void fuse_fx(ir::GraphModule& model, const backend::BackendConfig& backend_config,
             const FuseCustomConfig& fuse_custom_config) {
  passes::PassManager().add("fuse").run(model, options_for(backend_config, {}));
  keep_preserved(model, fuse_custom_config.preserved_attributes, "fuse_fx");
}

void fuse_fx(ir::GraphModule& model) { fuse_fx(model, backend::get_native_backend_config()); }

void prepare_fx(ir::GraphModule& model, const quant::QConfigMapping& qconfig_mapping,
                const backend::BackendConfig& backend_config, const PrepareCustomConfig& prepare_custom_config) {
  passes::PassOptions options = options_for(backend_config, prepare_custom_config);
  options.qconfig_mapping = std::make_shared<quant::QConfigMapping>(qconfig_mapping);
  check_custom_config_modules(model, prepare_custom_config, "prepare_fx");
  passes::PassManager().add("fuse").add("insert-observers").run(model, options);
  keep_preserved(model, prepare_custom_config.preserved_attributes, "prepare_fx");
}

void prepare_qat_fx(ir::GraphModule& model, const quant::QConfigMapping& qconfig_mapping,
                    const backend::BackendConfig& backend_config, const PrepareCustomConfig& prepare_custom_config) {
  passes::PassOptions options = options_for(backend_config, prepare_custom_config);
  options.qconfig_mapping = std::make_shared<quant::QConfigMapping>(qconfig_mapping);
  options.is_qat = true;
  check_custom_config_modules(model, prepare_custom_config, "prepare_qat_fx");
  model.root().train(true);
  passes::PassManager().add("fuse").add("swap-qat-modules").add("insert-observers").run(model, options);
  keep_preserved(model, prepare_custom_config.preserved_attributes, "prepare_qat_fx");
}

void prepare_fx(ir::GraphModule& model, const quant::QConfigMapping& qconfig_mapping) {
  prepare_fx(model, qconfig_mapping, backend::get_native_backend_config());
}

void convert_to_reference_fx(ir::GraphModule& model, const backend::BackendConfig& backend_config,
                             const PrepareCustomConfig& prepare_custom_config,
                             const ConvertCustomConfig& convert_custom_config) {
  passes::PassOptions options = options_for(backend_config, prepare_custom_config);
  options.convert_custom_config = std::make_shared<ConvertCustomConfig>(convert_custom_config);
  passes::PassManager().add("convert-to-reference").run(model, options);
  keep_preserved(model, convert_custom_config.preserved_attributes, "convert_to_reference_fx");
}

void convert_to_reference_fx(ir::GraphModule& model) {
  convert_to_reference_fx(model, backend::get_native_backend_config());
}

void convert_fx(ir::GraphModule& model, const backend::BackendConfig& backend_config,
                const PrepareCustomConfig& prepare_custom_config, const ConvertCustomConfig& convert_custom_config) {
  passes::PassOptions options = options_for(backend_config, prepare_custom_config);
  options.convert_custom_config = std::make_shared<ConvertCustomConfig>(convert_custom_config);
  passes::PassManager().add("convert-to-reference").add("lower-to-native").run(model, options);
  keep_preserved(model, convert_custom_config.preserved_attributes, "convert_fx");
}

void convert_fx(ir::GraphModule& model) { convert_fx(model, backend::get_native_backend_config()); }

}  // namespace qfx
