#pragma once
/// \file
/// The float module library: the `torch.nn` modules of torchvision's
/// classification models and of the seeds, registered in
/// `qfx::ir::ModuleRegistry` under their PyTorch names (`torch.nn.Conv2d`)
/// with their forward and Python `extra_repr`. LibTorch's `torch::nn` modules
/// are used where they exist; see activation.h for the rest.

#include <string>
#include <vector>

// The weighted float classes, for the reference and QAT class templates
// (reference.h, qat.h) without LibTorch's module headers.
namespace torch::nn {
class LinearImpl;
class Conv1dImpl;
class Conv2dImpl;
class Conv3dImpl;
class ConvTranspose1dImpl;
class ConvTranspose2dImpl;
class ConvTranspose3dImpl;
class EmbeddingImpl;
class EmbeddingBagImpl;
}  // namespace torch::nn

namespace qfx::nn {

/// The PyTorch names of all registered float module types, sorted.
std::vector<std::string> float_module_names();

}  // namespace qfx::nn
