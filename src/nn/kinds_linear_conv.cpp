// Module kinds: Linear, Conv1d/2d/3d, ConvTranspose1d/2d/3d (LibTorch
// modules), with Python's extra_repr.

#include "module_kinds.h"

#include <torch/enum.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

namespace qfx::nn {
namespace {

using detail::add_kind;
using detail::as;

std::string linear_repr(const torch::nn::Module& m) {
  const auto& o = as<torch::nn::LinearImpl>(m).options;
  return "in_features=" + std::to_string(o.in_features()) + ", out_features=" + std::to_string(o.out_features()) +
         ", bias=" + detail::py_bool(o.bias());
}

// Python's _ConvNd.extra_repr.
template <size_t D>
std::string conv_repr(const torch::nn::detail::ConvNdOptions<D>& o) {
  std::string s = std::to_string(o.in_channels()) + ", " + std::to_string(o.out_channels()) +
                  ", kernel_size=" + detail::py_tuple(*o.kernel_size()) + ", stride=" + detail::py_tuple(*o.stride());
  if (const auto* padding = c10::get_if<torch::ExpandingArray<D>>(&o.padding())) {
    if (!detail::all_equal(**padding, 0)) s += ", padding=" + detail::py_tuple(**padding);
  } else {
    s += c10::get_if<torch::enumtype::kSame>(&o.padding()) ? ", padding=same" : ", padding=valid";
  }
  if (!detail::all_equal(*o.dilation(), 1)) s += ", dilation=" + detail::py_tuple(*o.dilation());
  if (!detail::all_equal(*o.output_padding(), 0)) {
    s += ", output_padding=" + detail::py_tuple(*o.output_padding());
  }
  if (o.groups() != 1) s += ", groups=" + std::to_string(o.groups());
  if (!o.bias()) s += ", bias=False";
  std::string mode = torch::enumtype::get_enum_name(o.padding_mode());
  if (mode != "kZeros") s += ", padding_mode=" + ir::snake_case(mode.substr(1));
  return s;
}

template <typename Impl>
void add_conv(const std::string& name) {
  add_kind<Impl>(name, [](const torch::nn::Module& m) { return conv_repr(as<Impl>(m).options); });
}

}  // namespace

void register_linear_conv_kinds() {
  add_kind<torch::nn::LinearImpl>("torch.nn.Linear", linear_repr);
  add_conv<torch::nn::Conv1dImpl>("torch.nn.Conv1d");
  add_conv<torch::nn::Conv2dImpl>("torch.nn.Conv2d");
  add_conv<torch::nn::Conv3dImpl>("torch.nn.Conv3d");
  add_conv<torch::nn::ConvTranspose1dImpl>("torch.nn.ConvTranspose1d");
  add_conv<torch::nn::ConvTranspose2dImpl>("torch.nn.ConvTranspose2d");
  add_conv<torch::nn::ConvTranspose3dImpl>("torch.nn.ConvTranspose3d");
}

}  // namespace qfx::nn
