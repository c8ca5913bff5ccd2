// Helpers of the deep-copy constructors of qfx's modules.

#include "qfx/nn/clone.h"

namespace qfx::nn {

void check_clone_device(const c10::optional<torch::Device>& device, const std::string& type) {
  TORCH_CHECK(!device.has_value() || device->is_cpu(), type, " can only be copied on the CPU, not to ", *device);
}

void copy_training_modes(const torch::nn::Module& from, torch::nn::Module& to) {
  // train() sets a module's children too, so each child is set after its
  // parent (children() needs no shared_ptr to the module: this runs in
  // the copying constructors).
  to.train(from.is_training());
  auto originals = from.children();
  auto copies = to.children();
  TORCH_CHECK(originals.size() == copies.size(), "the copy of ", from.name(), " has ", copies.size(),
              " children, the original ", originals.size());
  for (size_t i = 0; i < originals.size(); ++i) copy_training_modes(*originals[i], *copies[i]);
}

}  // namespace qfx::nn
