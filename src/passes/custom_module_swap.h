#pragma once
// Custom module classes in the passes: which nodes call one, and the class
// a module is swapped for (PyTorch's get_swapped_custom_module_class).
// Internal to the passes.

#include "qfx/passes/custom_config.h"
#include "qfx/ir/graph_module.h"
#include "qfx/nn/custom_modules.h"
#include "qfx/quant/qconfig.h"

namespace qfx::passes::detail {

/// The module `node` calls when its class is a key of `mapping` (any quant type), else nullptr.
std::shared_ptr<torch::nn::Module> custom_module_at(const ir::Node& node, const ir::GraphModule& gm,
                                                    const CustomModuleMapping& mapping);

/// The registered class `module` is swapped for under `qconfig`'s quant type;
/// c10::Error naming the node when the mapping or the registry lacks it.
const nn::CustomModuleClass& swapped_class(const ir::Node& node, const torch::nn::Module& module,
                                           const CustomModuleMapping& mapping, const quant::QConfig& qconfig);

}  // namespace qfx::passes::detail
