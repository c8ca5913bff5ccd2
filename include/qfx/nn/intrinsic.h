#pragma once
/// \file
/// The fused modules of `torch.ao.nn.intrinsic`: containers of the float
/// modules a fusion pattern matched (ConvReLU2d holds a Conv2d and a ReLU),
/// registered as children "0", "1", ... as Python's Sequential does, and run
/// one after the other. Prepare swaps them for QAT modules, convert for
/// reference or quantized ones. ConvAdd2d and ConvAddReLU2d take a second
/// input that is added to the conv's output.
///
/// \code
///   auto conv = std::make_shared<torch::nn::Conv2dImpl>(torch::nn::Conv2dOptions(3, 8, 3));
///   auto relu = std::make_shared<torch::nn::ReLUImpl>();
///   qfx::nn::ConvReLU2d fused(conv, relu);   // c10::Error unless Conv2d and ReLU
///   fused->module(0);                         // the conv
/// \endcode

#include "qfx/nn/clone.h"

#include <ATen/core/ivalue.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <memory>
#include <string>
#include <vector>

namespace qfx::nn {

using ModulePtr = std::shared_ptr<torch::nn::Module>;

/// The kinds of fused module.
enum class FusedKind {
  kConvReLU1d,
  kConvReLU2d,
  kConvReLU3d,
  kConvBn1d,
  kConvBn2d,
  kConvBn3d,
  kConvBnReLU1d,
  kConvBnReLU2d,
  kConvBnReLU3d,
  kLinearReLU,
  kLinearBn1d,
  kBNReLU2d,
  kBNReLU3d,
  kLinearLeakyReLU,
  kLinearTanh,
  kConvAdd2d,
  kConvAddReLU2d,
};

/// The PyTorch name of a kind (`torch.ao.nn.intrinsic.ConvReLU2d`) and the
/// module types it holds, in order.
struct FusedKindInfo {
  const char* name;
  std::vector<const char*> module_types;
  bool adds_second_input;  ///< ConvAdd2d, ConvAddReLU2d
};
const FusedKindInfo& fused_kind_info(FusedKind kind);
/// All kinds, in FusedKind order.
const std::vector<FusedKind>& fused_kinds();

/// What every fused module shares.
class FusedModuleImpl : public torch::nn::Module {
 public:
  FusedKind kind() const { return kind_; }
  /// The fused modules in order (Conv2d, ReLU for ConvReLU2d).
  const std::vector<ModulePtr>& modules() const { return modules_; }
  const ModulePtr& module(size_t index) const { return modules_.at(index); }
  /// Replaces module `index` (convert puts a reference module in place of
  /// the float one, as Python's `fused[0] = ref`); no type check.
  void set_module(size_t index, ModulePtr module);
  /// For ConvAdd2d / ConvAddReLU2d: the add op (`torch.add` or `operator.add`).
  const std::string& add_op() const { return add_op_; }
  /// Runs the modules in order; ConvAdd* add `inputs[1]` to the conv's output.
  c10::IValue forward(std::vector<c10::IValue>& inputs);

 protected:
  /// Checks each module's type against the kind's (c10::Error naming both).
  FusedModuleImpl(FusedKind kind, std::vector<ModulePtr> modules, std::string add_op = "");
  /// A deep copy, each module copied (module 0 may be a reference module by now).
  FusedModuleImpl(const FusedModuleImpl& other, DeepCopy);

 private:
  void register_modules();

  FusedKind kind_;
  std::vector<ModulePtr> modules_;
  std::string add_op_;
};

/// One fused module class per kind.
template <FusedKind Kind>
class FusedImpl final : public FusedModuleImpl {
 public:
  explicit FusedImpl(std::vector<ModulePtr> modules) : FusedModuleImpl(Kind, std::move(modules)) {}
  FusedImpl(ModulePtr a, ModulePtr b) : FusedImpl(std::vector<ModulePtr>{std::move(a), std::move(b)}) {}
  FusedImpl(ModulePtr a, ModulePtr b, ModulePtr c)
      : FusedImpl(std::vector<ModulePtr>{std::move(a), std::move(b), std::move(c)}) {}
  FusedImpl(const FusedModuleImpl& other, DeepCopy tag) : FusedModuleImpl(other, tag) {}
  std::shared_ptr<torch::nn::Module> clone(const c10::optional<torch::Device>& device = c10::nullopt) const override {
    return clone_through<FusedImpl>(static_cast<const FusedModuleImpl&>(*this), device);
  }
};

/// ConvAdd2d(conv, add) and ConvAddReLU2d(conv, add, relu), as in Python:
/// the add is an op name, not a module.
template <FusedKind Kind>
class ConvAddImpl final : public FusedModuleImpl {
 public:
  ConvAddImpl(ModulePtr conv, std::string add_op) : FusedModuleImpl(Kind, {std::move(conv)}, std::move(add_op)) {}
  ConvAddImpl(ModulePtr conv, std::string add_op, ModulePtr relu)
      : FusedModuleImpl(Kind, {std::move(conv), std::move(relu)}, std::move(add_op)) {}
  ConvAddImpl(const FusedModuleImpl& other, DeepCopy tag) : FusedModuleImpl(other, tag) {}
  std::shared_ptr<torch::nn::Module> clone(const c10::optional<torch::Device>& device = c10::nullopt) const override {
    return clone_through<ConvAddImpl>(static_cast<const FusedModuleImpl&>(*this), device);
  }
};

using ConvReLU1dImpl = FusedImpl<FusedKind::kConvReLU1d>;
using ConvReLU2dImpl = FusedImpl<FusedKind::kConvReLU2d>;
using ConvReLU3dImpl = FusedImpl<FusedKind::kConvReLU3d>;
using ConvBn1dImpl = FusedImpl<FusedKind::kConvBn1d>;
using ConvBn2dImpl = FusedImpl<FusedKind::kConvBn2d>;
using ConvBn3dImpl = FusedImpl<FusedKind::kConvBn3d>;
using ConvBnReLU1dImpl = FusedImpl<FusedKind::kConvBnReLU1d>;
using ConvBnReLU2dImpl = FusedImpl<FusedKind::kConvBnReLU2d>;
using ConvBnReLU3dImpl = FusedImpl<FusedKind::kConvBnReLU3d>;
using LinearReLUImpl = FusedImpl<FusedKind::kLinearReLU>;
using LinearBn1dImpl = FusedImpl<FusedKind::kLinearBn1d>;
using BNReLU2dImpl = FusedImpl<FusedKind::kBNReLU2d>;
using BNReLU3dImpl = FusedImpl<FusedKind::kBNReLU3d>;
using LinearLeakyReLUImpl = FusedImpl<FusedKind::kLinearLeakyReLU>;
using LinearTanhImpl = FusedImpl<FusedKind::kLinearTanh>;
using ConvAdd2dImpl = ConvAddImpl<FusedKind::kConvAdd2d>;
using ConvAddReLU2dImpl = ConvAddImpl<FusedKind::kConvAddReLU2d>;

TORCH_MODULE(ConvReLU1d);
TORCH_MODULE(ConvReLU2d);
TORCH_MODULE(ConvReLU3d);
TORCH_MODULE(ConvBn1d);
TORCH_MODULE(ConvBn2d);
TORCH_MODULE(ConvBn3d);
TORCH_MODULE(ConvBnReLU1d);
TORCH_MODULE(ConvBnReLU2d);
TORCH_MODULE(ConvBnReLU3d);
TORCH_MODULE(LinearReLU);
TORCH_MODULE(LinearBn1d);
TORCH_MODULE(BNReLU2d);
TORCH_MODULE(BNReLU3d);
TORCH_MODULE(LinearLeakyReLU);
TORCH_MODULE(LinearTanh);
TORCH_MODULE(ConvAdd2d);
TORCH_MODULE(ConvAddReLU2d);

/// A fused module of `kind` from its parts in order (modules, and the add
/// op's name for ConvAdd*), as its Python constructor; c10::Error on parts
/// of the wrong types.
ModulePtr make_fused_module(FusedKind kind, const std::vector<ModulePtr>& modules, const std::string& add_op = "");

}  // namespace qfx::nn
