#pragma once
/// \file
/// TorchScript methods written by qfx (the exported forward, modules built
/// at import) compiled with `torch` resolved as Python's: ATen's ops as
/// `torch.<op>` and every registered op as `torch.ops.<namespace>.<op>`.

#include <torch/csrc/jit/api/module.h>

#include <string>

namespace qfx::io {

/// Compiles `source` (one or more `def`s) into `module`; TorchScript's own
/// error when it rejects the source.
/// \code
///   qfx::io::define_method(module, "def forward(self, x):\n    return torch.relu(x)\n");
/// \endcode
void define_method(torch::jit::Module& module, const std::string& source);

}  // namespace qfx::io
