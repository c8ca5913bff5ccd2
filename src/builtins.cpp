// register_builtins(): the layers' registrations in layer order, once, and
// the one call made when libqfx is loaded.

#include "qfx/builtins.h"

#include "qfx/backend/backend_registry.h"
#include "qfx/ir/module_registry.h"
#include "qfx/nn/builtins.h"
#include "qfx/quant/observer_spec.h"

#include <mutex>

namespace qfx {

void register_builtins() {
  static std::once_flag once;
  std::call_once(once, [] {
    ir::register_builtins();
    quant::register_builtins();
    backend::register_builtins();
    nn::register_builtins();
  });
}

namespace {

// Run when libqfx is loaded, before main(): the one static initializer
// that touches the registries.
const bool kLoaded = (register_builtins(), true);

}  // namespace
}  // namespace qfx
