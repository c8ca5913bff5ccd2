// The fuser methods configs name, registered with the backend registry:
// fuser_method_mappings.py's (conv/linear + bn, as fusion.h), and onednn's
// conv + add (+ relu) and linear + bn + leaky_relu. Parts arrive in the
// pattern's forward order, MatchAllNode parts included.

#include "qfx/backend/backend_registry.h"
#include "qfx/ir/module_registry.h"
#include "qfx/nn/fusion.h"
#include "module_kinds.h"

#include <c10/util/Exception.h>

namespace qfx::nn {
namespace {

using backend::FuserPart;
using Parts = std::vector<FuserPart>;

/// The modules among the parts, in order.
std::vector<ModulePtr> modules_of(const Parts& parts, size_t expected, const char* fuser) {
  std::vector<ModulePtr> modules;
  for (const FuserPart& p : parts) {
    if (p.module) modules.push_back(p.module);
  }
  TORCH_CHECK(modules.size() == expected, fuser, " fuses ", expected, " modules, got ", modules.size());
  return modules;
}

/// The op of the add part (torch.add or operator.add).
std::string add_op_of(const Parts& parts, const char* fuser) {
  for (const FuserPart& p : parts) {
    if (!p.module && (p.op == "torch.add" || p.op == "operator.add")) return p.op;
  }
  TORCH_CHECK(false, fuser, " expects an add among its parts");
}

/// onednn's conv (+ bn) + add (+ relu), whichever side the conv is on.
backend::FuserMethod conv_add_fuser(bool with_bn, bool with_relu, std::string name) {
  return [with_bn, with_relu, name](bool is_qat, const Parts& parts) -> ModulePtr {
    std::vector<ModulePtr> m = modules_of(parts, 1 + with_bn + with_relu, name.c_str());
    std::string add = add_op_of(parts, name.c_str());
    if (with_bn) TORCH_CHECK(!is_qat, "Cannot fuse train modules: conv, bn, add (", name, ")");
    ModulePtr conv = with_bn ? fuse_conv_bn_eval(*m[0], *m[1]) : m[0];
    if (!with_relu) return std::make_shared<ConvAdd2dImpl>(conv, add);
    return std::make_shared<ConvAddReLU2dImpl>(conv, add, m.back());
  };
}

ModulePtr fuse_linear_bn_leaky_relu(bool is_qat, const Parts& parts) {
  std::vector<ModulePtr> m = modules_of(parts, 3, "_fuse_linear_bn_leaky_relu");
  TORCH_CHECK(m[0]->is_training() == m[1]->is_training() && m[1]->is_training() == m[2]->is_training(),
              "Linear, BN and LeakyReLU all must be in the same mode (train or eval).");
  TORCH_CHECK(!is_qat, "Cannot fuse train modules: Linear, BatchNorm1d, LeakyReLU");
  TORCH_CHECK(ir::module_type_name(*m[0]) == "torch.nn.Linear",
              "Cannot fuse eval modules: ", ir::module_type_name(*m[0]), ", BatchNorm1d, LeakyReLU");
  return make_fused_module(FusedKind::kLinearLeakyReLU, {fuse_linear_bn_eval(*m[0], *m[1]), m[2]});
}

constexpr bool kConcurrent = true;  // each builds a module from its parts only

}  // namespace

void register_fuser_methods() {
  backend::BackendRegistry& registry = backend::BackendRegistry::instance();
  registry.add_fuser_method(
      "fuse_conv_bn",
      [](bool is_qat, const Parts& p) {
        auto m = modules_of(p, 2, "fuse_conv_bn");
        return fuse_conv_bn(is_qat, m[0], m[1]);
      },
      kConcurrent);
  registry.add_fuser_method(
      "fuse_conv_bn_relu",
      [](bool is_qat, const Parts& p) {
        auto m = modules_of(p, 3, "fuse_conv_bn_relu");
        return fuse_conv_bn_relu(is_qat, m[0], m[1], m[2]);
      },
      kConcurrent);
  registry.add_fuser_method(
      "fuse_linear_bn",
      [](bool is_qat, const Parts& p) {
        auto m = modules_of(p, 2, "fuse_linear_bn");
        return fuse_linear_bn(is_qat, m[0], m[1]);
      },
      kConcurrent);
  registry.add_fuser_method(
      "fuse_convtranspose_bn",
      [](bool is_qat, const Parts& p) {
        auto m = modules_of(p, 2, "fuse_convtranspose_bn");
        return fuse_convtranspose_bn(is_qat, m[0], m[1]);
      },
      kConcurrent);
  for (bool with_relu : {false, true}) {
    for (bool with_bn : {false, true}) {
      for (const char* side : {"left", "right"}) {
        std::string name =
            std::string("_fuse_conv") + (with_bn ? "_bn" : "") + "_add" + (with_relu ? "_relu" : "") + "_" + side;
        registry.add_fuser_method(name, conv_add_fuser(with_bn, with_relu, name), kConcurrent);
      }
    }
  }
  registry.add_fuser_method("_fuse_linear_bn_leaky_relu", fuse_linear_bn_leaky_relu, kConcurrent);
}

}  // namespace qfx::nn
