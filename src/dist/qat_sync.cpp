// Distributed QAT: fake-quantize statistics synchronised and gradients
// averaged over the ranks, each in one all-reduce.

#include "qfx/dist/distributed.h"

#include "fake_quant_state.h"

#include "qfx/quant/min_max_observers.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <utility>
#include <vector>

namespace qfx::dist {

void sync_fake_quantize(torch::nn::Module& module, ProcessGroup& group) {
  at::NoGradGuard no_grad;
  std::vector<std::pair<quant::ActivationPostProcess*, quant::MinMaxStatsObserver*>> synced;
  std::vector<at::Tensor> parts;  // -min and max: one max-reduction for both
  std::vector<torch::nn::Module*> modules = {&module};
  for (const auto& child : module.modules(/*include_self=*/false)) modules.push_back(child.get());
  for (torch::nn::Module* child : modules) {
    auto* observer = dynamic_cast<quant::ActivationPostProcess*>(child);
    if (observer == nullptr || &detail::statistics_of(*observer) == observer) continue;
    auto* stats = dynamic_cast<quant::MinMaxStatsObserver*>(&detail::statistics_of(*observer));
    if (stats == nullptr) continue;
    synced.emplace_back(observer, stats);
    parts.push_back(stats->min_val.reshape({-1}).neg());
    parts.push_back(stats->max_val.reshape({-1}));
  }
  if (synced.empty()) return;
  at::Tensor flat = at::cat(parts).to(at::kFloat).contiguous();
  at::Tensor length = at::tensor({flat.numel(), -flat.numel()}, at::kLong);
  group.all_reduce(length, ProcessGroup::Reduce::kMax);
  TORCH_CHECK(length[0].item<int64_t>() == -length[1].item<int64_t>(),
              "fake-quantize statistics differ in size between ranks (the ranks run different models)");
  group.all_reduce(flat, ProcessGroup::Reduce::kMax);
  int64_t offset = 0;
  for (auto& [observer, stats] : synced) {
    const int64_t n = stats->min_val.numel();
    stats->min_val.copy_(flat.narrow(0, offset, n).neg().reshape(stats->min_val.sizes()));
    stats->max_val.copy_(flat.narrow(0, offset + n, n).reshape(stats->max_val.sizes()));
    offset += 2 * n;
    detail::refresh_qparams(*observer);
  }
}

void average_gradients(const std::vector<at::Tensor>& parameters, ProcessGroup& group) {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> trained;
  for (const at::Tensor& p : parameters) {
    if (p.requires_grad()) trained.push_back(p);
  }
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : trained) {
    grads.push_back(p.grad().defined() ? p.grad().reshape({-1}) : at::zeros({p.numel()}, p.options()));
  }
  if (grads.empty()) return;
  at::Tensor flat = at::cat(grads).contiguous();
  group.all_reduce(flat, ProcessGroup::Reduce::kSum);
  flat.div_(static_cast<double>(group.world_size()));
  int64_t offset = 0;
  for (const at::Tensor& p : trained) {
    at::Tensor mean = flat.narrow(0, offset, p.numel()).view(p.sizes());
    if (p.grad().defined()) {
      p.mutable_grad().copy_(mean);
    } else {
      p.mutable_grad() = mean.clone();
    }
    offset += p.numel();
  }
}

}  // namespace qfx::dist
