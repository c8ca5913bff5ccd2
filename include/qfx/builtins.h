#pragma once
/// \file
/// qfx's built-ins in one place: the ops the interpreter runs, the module
/// kinds, observer classes, fuser methods and backend functions, each layer's
/// registered by that layer's `register_builtins()`, bottom to top.
///
/// libqfx calls register_builtins() when it is loaded, so the registries
/// are complete before any use; a program that links qfx statically (or
/// loads it in an unusual way) calls it first itself. Later calls do nothing.
///
/// \code
///   qfx::register_builtins();
///   qfx::ir::ModuleRegistry::instance().find("torch.nn.Conv2d");  // registered
/// \endcode

namespace qfx {

/// Registers every layer's built-ins (ir, quant, backend, nn) once; thread-safe.
void register_builtins();

}  // namespace qfx
