#pragma once
/// \file
/// nn's built-ins: the module kinds of `torch.nn`, `torch.ao.nn.intrinsic`,
/// `.qat`, `.quantized` (reference, dynamic) and `.quantizable`, the fuser
/// methods and the custom module LSTM classes.

namespace qfx::nn {

/// Registers nn's built-ins with ir::ModuleRegistry, the backend registry
/// (fuser methods) and the custom module classes. Part of
/// qfx::register_builtins() (qfx/builtins.h).
void register_builtins();

}  // namespace qfx::nn
