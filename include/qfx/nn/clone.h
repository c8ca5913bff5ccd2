#pragma once
/// \file
/// Deep copies of qfx's modules (`module->clone()`, Python's
/// `copy.deepcopy`). LibTorch's `Cloneable` copies each registered tensor on
/// its own, which would untie what qfx's modules share (a reference module's
/// `weight` is its float module's, a QAT module's is its float module's), so
/// these modules copy their parts and build themselves anew from the copies:
/// each has a constructor `Impl(const Impl& other, DeepCopy)` that clone()
/// calls. Attributes that are not modules (packed weights, qparams) are
/// copied by `IValue::deepcopy`, which rebuilds packed weights through their
/// `__getstate__` / `__setstate__`, as PyTorch's deepcopy does.
///
/// \code
///   std::shared_ptr<torch::nn::Module> copy = quantized_linear->clone();
///   auto observer = qfx::nn::deep_copy_of(qconfig.weight.make());  // an observer and its statistics
/// \endcode

#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>
#include <torch/nn/module.h>

#include <memory>
#include <string>

namespace qfx::nn {

/// Tag of the constructors that deep-copy a module.
struct DeepCopy {};

/// qfx's modules live on the CPU: a copy to another device is refused.
void check_clone_device(const c10::optional<torch::Device>& device, const std::string& type);

/// `Impl`'s clone(): a new `Impl` from `self` through the deep-copy
/// constructor (for final classes that inherit it from a shared base).
template <typename Impl, typename Base>
std::shared_ptr<torch::nn::Module> clone_through(const Base& self, const c10::optional<torch::Device>& device) {
  check_clone_device(device, self.name());
  return std::make_shared<Impl>(self, DeepCopy{});
}

/// A deep copy of `module` (its clone()), as the same pointer type.
template <typename T>
std::shared_ptr<T> deep_copy_of(const std::shared_ptr<T>& module) {
  if (module == nullptr) return nullptr;
  auto copy = std::dynamic_pointer_cast<T>(module->clone());
  TORCH_CHECK(copy != nullptr, "the copy of ", module->name(), " has another type");
  return copy;
}

/// Gives every module under `to` the training mode of its counterpart under
/// `from` (the same tree, as a deep copy has it).
void copy_training_modes(const torch::nn::Module& from, torch::nn::Module& to);

}  // namespace qfx::nn
