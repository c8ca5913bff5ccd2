// Module kinds: pooling, normalization, embedding, Flatten, Dropout,
// Identity (LibTorch modules), with Python's extra_repr.

#include "module_kinds.h"

#include "qfx/ir/kernel_workarounds.h"
#include "qfx/nn/float_modules.h"

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/functional/instancenorm.h>  // before the module, which does not include it
#include <torch/nn/modules/instancenorm.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/modules/pooling.h>

namespace qfx::nn {
namespace {

using detail::add_kind;
using detail::as;
using detail::py_bool;
using detail::py_compact;
using detail::py_float;
using detail::py_tuple;

template <typename Impl>
void add_max_pool(const std::string& name) {
  add_kind<Impl>(name, [](const torch::nn::Module& m) {
    const auto& o = as<Impl>(m).options;
    return "kernel_size=" + py_compact(*o.kernel_size()) + ", stride=" + py_compact(*o.stride()) +
           ", padding=" + py_compact(*o.padding()) + ", dilation=" + py_compact(*o.dilation()) +
           ", ceil_mode=" + py_bool(o.ceil_mode());
  });
}

// nn.AvgPool{1,2,3}d: its forward works around qnnpack's faulty avg pool (ir::avg_pool).
template <typename Impl>
void add_avg_pool(const std::string& name, int64_t dims) {
  add_kind<Impl>(
      name,
      [dims](const torch::nn::Module& m) {
        const auto& o = as<Impl>(m).options;
        auto fmt = [dims](c10::IntArrayRef v) { return dims == 1 ? py_tuple(v) : py_compact(v); };
        return "kernel_size=" + fmt(*o.kernel_size()) + ", stride=" + fmt(*o.stride()) +
               ", padding=" + fmt(*o.padding());
      },
      [dims](torch::nn::Module& m, std::vector<c10::IValue>& in) -> c10::IValue {
        return ir::avg_pool(dims, detail::only_tensor_input(m, in), ir::avg_pool_options(as<Impl>(m).options));
      });
}

int64_t size_value(int64_t v) { return v; }
int64_t size_value(const c10::optional<int64_t>& v) { return v.value_or(-1); }

template <typename Impl>
void add_adaptive_pool(const std::string& name) {
  add_kind<Impl>(name, [](const torch::nn::Module& m) {
    std::vector<int64_t> size;
    for (const auto& s : *as<Impl>(m).options.output_size()) size.push_back(size_value(s));
    return "output_size=" + (size.size() == 1 ? std::to_string(size[0]) : py_tuple(size));
  });
}

std::string momentum_repr(double m) { return py_float(m); }
std::string momentum_repr(const c10::optional<double>& m) { return m ? py_float(*m) : "None"; }

template <typename Impl>
void add_norm(const std::string& name) {
  add_kind<Impl>(name, [](const torch::nn::Module& m) {
    const auto& o = as<Impl>(m).options;
    return std::to_string(o.num_features()) + ", eps=" + py_float(o.eps()) +
           ", momentum=" + momentum_repr(o.momentum()) + ", affine=" + py_bool(o.affine()) +
           ", track_running_stats=" + py_bool(o.track_running_stats());
  });
}

std::string layer_norm_repr(const torch::nn::Module& m) {
  const auto& o = as<torch::nn::LayerNormImpl>(m).options;
  return py_tuple(o.normalized_shape()) + ", eps=" + py_float(o.eps()) +
         ", elementwise_affine=" + py_bool(o.elementwise_affine());
}

std::string group_norm_repr(const torch::nn::Module& m) {
  const auto& o = as<torch::nn::GroupNormImpl>(m).options;
  return std::to_string(o.num_groups()) + ", " + std::to_string(o.num_channels()) + ", eps=" + py_float(o.eps()) +
         ", affine=" + py_bool(o.affine());
}

std::string embedding_repr(const torch::nn::Module& m) {
  const auto& o = as<torch::nn::EmbeddingImpl>(m).options;
  std::string s = std::to_string(o.num_embeddings()) + ", " + std::to_string(o.embedding_dim());
  if (o.padding_idx()) s += ", padding_idx=" + std::to_string(*o.padding_idx());
  return s;
}

std::string embedding_bag_repr(const torch::nn::Module& m) {
  const auto& o = as<torch::nn::EmbeddingBagImpl>(m).options;
  std::string mode = torch::enumtype::get_enum_name(o.mode());
  return std::to_string(o.num_embeddings()) + ", " + std::to_string(o.embedding_dim()) +
         ", mode=" + ir::snake_case(mode.substr(1));
}

c10::IValue embedding_bag_forward(torch::nn::Module& m, std::vector<c10::IValue>& in) {
  TORCH_CHECK(!in.empty() && in.size() <= 3, "EmbeddingBag takes 1 to 3 inputs, got ", in.size());
  auto tensor_or_none = [&in](size_t i) { return i < in.size() && in[i].isTensor() ? in[i].toTensor() : at::Tensor(); };
  return dynamic_cast<torch::nn::EmbeddingBagImpl&>(m).forward(in[0].toTensor(), tensor_or_none(1), tensor_or_none(2));
}

}  // namespace

void register_pool_norm_kinds() {
  add_max_pool<torch::nn::MaxPool1dImpl>("torch.nn.MaxPool1d");
  add_max_pool<torch::nn::MaxPool2dImpl>("torch.nn.MaxPool2d");
  add_max_pool<torch::nn::MaxPool3dImpl>("torch.nn.MaxPool3d");
  add_avg_pool<torch::nn::AvgPool1dImpl>("torch.nn.AvgPool1d", 1);
  add_avg_pool<torch::nn::AvgPool2dImpl>("torch.nn.AvgPool2d", 2);
  add_avg_pool<torch::nn::AvgPool3dImpl>("torch.nn.AvgPool3d", 3);
  add_adaptive_pool<torch::nn::AdaptiveAvgPool1dImpl>("torch.nn.AdaptiveAvgPool1d");
  add_adaptive_pool<torch::nn::AdaptiveAvgPool2dImpl>("torch.nn.AdaptiveAvgPool2d");
  add_adaptive_pool<torch::nn::AdaptiveAvgPool3dImpl>("torch.nn.AdaptiveAvgPool3d");
  add_norm<torch::nn::BatchNorm1dImpl>("torch.nn.BatchNorm1d");
  add_norm<torch::nn::BatchNorm2dImpl>("torch.nn.BatchNorm2d");
  add_norm<torch::nn::BatchNorm3dImpl>("torch.nn.BatchNorm3d");
  add_norm<torch::nn::InstanceNorm1dImpl>("torch.nn.InstanceNorm1d");
  add_norm<torch::nn::InstanceNorm2dImpl>("torch.nn.InstanceNorm2d");
  add_norm<torch::nn::InstanceNorm3dImpl>("torch.nn.InstanceNorm3d");
  add_kind<torch::nn::LayerNormImpl>("torch.nn.LayerNorm", layer_norm_repr);
  add_kind<torch::nn::GroupNormImpl>("torch.nn.GroupNorm", group_norm_repr);
  add_kind<torch::nn::EmbeddingImpl>("torch.nn.Embedding", embedding_repr);
  add_kind<torch::nn::EmbeddingBagImpl>("torch.nn.EmbeddingBag", embedding_bag_repr, embedding_bag_forward);
  add_kind<torch::nn::FlattenImpl>("torch.nn.Flatten", [](const torch::nn::Module& m) {
    const auto& o = as<torch::nn::FlattenImpl>(m).options;
    return "start_dim=" + std::to_string(o.start_dim()) + ", end_dim=" + std::to_string(o.end_dim());
  });
  add_kind<torch::nn::DropoutImpl>("torch.nn.Dropout", [](const torch::nn::Module& m) {
    const auto& o = as<torch::nn::DropoutImpl>(m).options;
    return "p=" + py_float(o.p()) + ", inplace=" + py_bool(o.inplace());
  });
  add_kind<torch::nn::IdentityImpl>("torch.nn.Identity", [](const torch::nn::Module&) { return ""; });
}

std::vector<std::string> float_module_names() {
  std::vector<std::string> names;
  for (const std::string& name : ir::ModuleRegistry::instance().names()) {
    if (name.rfind("torch.nn.", 0) == 0 && name != "torch.nn.Module") names.push_back(name);
  }
  return names;
}

}  // namespace qfx::nn
