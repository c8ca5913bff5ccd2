// qfx::register_builtins(): every layer's built-ins are in the registries
// (libqfx registers them when loaded), and calling it again changes nothing.

#include "qfx/builtins.h"

#include "qfx/backend/backend_registry.h"
#include "qfx/ir/module_registry.h"
#include "qfx/ir/op_registry.h"
#include "qfx/quant/observer_spec.h"

#include <gtest/gtest.h>

namespace qfx {
namespace {

TEST(Builtins, EveryLayerIsRegisteredOnce) {
  const size_t modules = ir::ModuleRegistry::instance().names().size();
  const size_t observers = quant::ObserverRegistry::instance().names().size();
  register_builtins();  // idempotent: adding a name twice would raise
  EXPECT_EQ(ir::ModuleRegistry::instance().names().size(), modules);
  EXPECT_EQ(quant::ObserverRegistry::instance().names().size(), observers);

  for (const char* name : {"torch.nn.Module", "torch.nn.Conv2d", "torch.nn.LSTM", "torch.ao.nn.intrinsic.ConvReLU2d",
                           "torch.ao.nn.qat.Linear", "torch.ao.nn.quantized.reference.Linear",
                           "torch.ao.nn.quantized.Linear", "torch.ao.nn.quantized.dynamic.LSTM",
                           "torch.ao.nn.quantizable.LSTM", "torch.ao.quantization.observer.MinMaxObserver"}) {
    EXPECT_NE(ir::ModuleRegistry::instance().find(std::string(name)), nullptr) << name;
  }
  EXPECT_NE(ir::OpRegistry::functions().find("torch.nn.functional.relu"), nullptr);
  EXPECT_NE(ir::OpRegistry::functions().find("operator.add"), nullptr);
  EXPECT_NE(ir::OpRegistry::methods().find("view"), nullptr);
  EXPECT_TRUE(quant::ObserverRegistry::instance().resolve("HistogramObserver").has_value());
  EXPECT_NE(backend::BackendRegistry::instance().fuser_method("fuse_conv_bn"), nullptr);
  EXPECT_NE(backend::BackendRegistry::instance().root_node_getter("_conv_add_root_node_getter_left"), nullptr);
}

}  // namespace
}  // namespace qfx
