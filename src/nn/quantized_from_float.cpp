// quantized_from_float: PyTorch's from_float as a reference module built
// with a weight observer that has seen the weight, then from_reference.

#include "qfx/ir/module_registry.h"
#include "qfx/nn/intrinsic.h"
#include "qfx/nn/quantized.h"
#include "qfx/nn/reference.h"

#include <c10/util/Exception.h>

namespace qfx::nn {
namespace {

at::Tensor weight_of(const torch::nn::Module& module) {
  auto params = module.named_parameters(/*recurse=*/false);
  const at::Tensor* weight = params.find("weight");
  TORCH_CHECK(weight != nullptr, "from_float: ", ir::module_type_name(module), " has no weight");
  return *weight;
}

}  // namespace

std::shared_ptr<QuantizedModuleImpl> quantized_from_float(const std::string& quantized_type,
                                                          const std::shared_ptr<torch::nn::Module>& float_module,
                                                          const quant::QConfig& qconfig,
                                                          std::optional<OutputQParams> output) {
  auto* fused = dynamic_cast<FusedModuleImpl*>(float_module.get());
  const std::shared_ptr<torch::nn::Module>& weighted = fused != nullptr ? fused->module(0) : float_module;
  if (!has_reference_module(ir::module_type_name(*weighted))) {  // BatchNorm2d, ELU, ...: no weight to quantize
    return quantized_from_reference(quantized_type, *float_module, output);
  }
  std::shared_ptr<quant::ActivationPostProcess> observer = qconfig.weight.make();
  observer->forward(weight_of(*weighted));
  std::shared_ptr<torch::nn::Module> reference = reference_from_float(weighted, weight_qparams_of(*observer));
  if (fused == nullptr) return quantized_from_reference(quantized_type, *reference, output);
  auto copy =
      std::dynamic_pointer_cast<FusedModuleImpl>(make_fused_module(fused->kind(), fused->modules(), fused->add_op()));
  copy->set_module(0, reference);  // the user's fused module stays as it is
  return quantized_from_reference(quantized_type, *copy, output);
}

}  // namespace qfx::nn
