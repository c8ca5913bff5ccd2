#pragma once
// A module's own tensors by name, for the module classes that read their
// float module's weight and bias.

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

namespace qfx::nn::detail {

/// The module's own parameter `name` (not a submodule's); undefined when it has none.
at::Tensor own_parameter(const torch::nn::Module& m, const char* name);

}  // namespace qfx::nn::detail
