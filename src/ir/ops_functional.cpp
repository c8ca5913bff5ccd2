// call_function rows for torch.nn.functional: each reads its arguments with
// the Python signature's names and defaults and calls the same ATen op that
// PyTorch's Python function calls.

#include "qfx/ir/op_registry.h"

#include "builtin_registrations.h"

#include "qfx/ir/kernel_workarounds.h"

#include <ATen/ATen.h>

namespace qfx::ir {
namespace {

using A = const CallArgs&;

at::Tensor relu(A a) {
  at::Tensor x = a.tensor(0, "input");
  return a.bool_or(1, "inplace", false) ? at::relu_(x) : at::relu(x);
}

at::Tensor hardtanh(A a, double lo, double hi, size_t inplace_index) {
  at::Tensor x = a.tensor(0, "input");
  bool inplace = a.bool_or(inplace_index, "inplace", false);
  at::Tensor out = clamp_in_memory_order(
      x, [&](at::Tensor v) { return inplace ? at::hardtanh_(v, lo, hi) : at::hardtanh(v, lo, hi); });
  return inplace ? x : out;
}

template <at::Tensor (*Op)(const at::Tensor&), at::Tensor& (*Inplace)(at::Tensor&)>
c10::IValue unary_inplace(A a) {
  at::Tensor x = a.tensor(0, "input");
  return a.bool_or(1, "inplace", false) ? Inplace(x) : Op(x);
}

at::Tensor softmax(A a, bool log) {
  at::Tensor x = a.tensor(0, "input");
  int64_t dim = a.to_int(1, "dim");
  auto dtype = a.optional_dtype(3, "dtype");
  return log ? at::log_softmax(x, dim, dtype) : at::softmax(x, dim, dtype);
}

template <int64_t N>
std::vector<int64_t> expand(std::vector<int64_t> v) {
  if (v.size() == 1 && N > 1) v.assign(N, v[0]);
  return v;
}

// F.convNd(input, weight, bias, stride, padding, dilation, groups) and
// F.conv_transposeNd(input, weight, bias, stride, padding, output_padding, groups, dilation)
template <int N, bool Transposed>
at::Tensor convolution(A a) {
  std::vector<int64_t> one(N, 1);
  std::vector<int64_t> zero(N, 0);
  size_t dilation = Transposed ? 7 : 5;
  std::vector<int64_t> output_padding = Transposed ? expand<N>(a.int_list_or(5, "output_padding", zero)) : zero;
  return at::convolution(a.tensor(0, "input"), a.tensor(1, "weight"), a.optional_tensor(2, "bias"),
                         expand<N>(a.int_list_or(3, "stride", one)), expand<N>(a.int_list_or(4, "padding", zero)),
                         expand<N>(a.int_list_or(dilation, "dilation", one)), Transposed, output_padding,
                         a.int_or(6, "groups", 1));
}

/// `n` values of a size or scale argument given as one number or a list.
template <typename T>
std::vector<T> spatial(const c10::IValue& v, int64_t n) {
  if (v.isList()) {
    std::vector<T> out;
    for (const c10::IValue& item : v.toListRef()) out.push_back(item.isDouble() ? item.toDouble() : item.toInt());
    return out;
  }
  return std::vector<T>(static_cast<size_t>(n),
                        v.isDouble() ? static_cast<T>(v.toDouble()) : static_cast<T>(v.toInt()));
}

// F.interpolate(input, size=None, scale_factor=None, mode='nearest', align_corners=None, ...): the ATen op
// Python's interpolate calls, with the output size or, when it is not given, the scale factors.
at::Tensor interpolate(A a) {
  at::Tensor x = a.tensor(0, "input");
  int64_t dims = x.dim() - 2;
  const c10::IValue* size = a.find(1, "size");
  const c10::IValue* scale = a.find(2, "scale_factor");
  TORCH_CHECK(size != nullptr || scale != nullptr, "interpolate needs size or scale_factor");
  c10::optional<std::vector<int64_t>> out_size;
  c10::optional<std::vector<double>> scales;
  if (size != nullptr)
    out_size = spatial<int64_t>(*size, dims);
  else
    scales = spatial<double>(*scale, dims);
  c10::OptionalIntArrayRef o = out_size ? c10::OptionalIntArrayRef(*out_size) : c10::nullopt;
  c10::optional<c10::ArrayRef<double>> s = scales ? c10::optional<c10::ArrayRef<double>>(*scales) : c10::nullopt;
  const c10::IValue* mode_value = a.find(3, "mode");
  std::string mode = mode_value ? mode_value->toStringRef() : "nearest";
  bool corners = a.bool_or(4, "align_corners", false);
  if (mode == "nearest" && dims == 1) return at::upsample_nearest1d(x, o, s);
  if (mode == "nearest" && dims == 2) return at::upsample_nearest2d(x, o, s);
  if (mode == "nearest" && dims == 3) return at::upsample_nearest3d(x, o, s);
  if (mode == "linear" && dims == 1) return at::upsample_linear1d(x, o, corners, s);
  if (mode == "bilinear" && dims == 2) return at::upsample_bilinear2d(x, o, corners, s);
  if (mode == "bicubic" && dims == 2) return at::upsample_bicubic2d(x, o, corners, s);
  if (mode == "trilinear" && dims == 3) return at::upsample_trilinear3d(x, o, corners, s);
  TORCH_CHECK(false, "interpolate: mode '", mode, "' on a ", x.dim(), "-d input is not supported");
}

template <int N>
at::Tensor max_pool(A a) {
  at::Tensor x = a.tensor(0, "input");
  auto kernel = expand<N>(a.int_list(1, "kernel_size"));
  auto stride = expand<N>(a.int_list_or(2, "stride", kernel));
  if (stride.empty()) stride = kernel;  // aten's default `[]` means "the kernel size"
  auto padding = expand<N>(a.int_list_or(3, "padding", {0}));
  auto dilation = expand<N>(a.int_list_or(4, "dilation", {1}));
  bool ceil = a.bool_or(5, "ceil_mode", false);
  TORCH_CHECK(!a.bool_or(6, "return_indices", false), "max_pool with return_indices is not supported");
  if (N == 1) return at::max_pool1d(x, kernel, stride, padding, dilation, ceil);
  if (N == 2) return at::max_pool2d(x, kernel, stride, padding, dilation, ceil);
  return at::max_pool3d(x, kernel, stride, padding, dilation, ceil);
}

template <int N>
at::Tensor avg_pool(A a) {
  AvgPoolOptions o;
  o.kernel = expand<N>(a.int_list(1, "kernel_size"));
  o.stride = expand<N>(a.int_list_or(2, "stride", o.kernel));
  if (o.stride.empty()) o.stride = o.kernel;
  o.padding = expand<N>(a.int_list_or(3, "padding", {0}));
  o.ceil_mode = a.bool_or(4, "ceil_mode", false);
  o.count_include_pad = a.bool_or(5, "count_include_pad", true);
  if (const c10::IValue* divisor = a.find(6, "divisor_override"); divisor != nullptr && !divisor->isNone())
    o.divisor_override = divisor->toInt();
  return ir::avg_pool(N, a.tensor(0, "input"), o);  // qnnpack's faulty path worked around
}

template <int N>
at::Tensor adaptive_avg_pool(A a) {
  at::Tensor x = a.tensor(0, "input");
  auto size = expand<N>(a.int_list(1, "output_size"));
  if (N == 1) return at::adaptive_avg_pool1d(x, size);
  if (N == 2) return at::adaptive_avg_pool2d(x, size);
  return at::adaptive_avg_pool3d(x, size);
}

at::Tensor dropout(A a) {
  at::Tensor x = a.tensor(0, "input");
  double p = a.double_or(1, "p", 0.5);
  bool train = a.bool_or(2, "training", true);
  return a.bool_or(3, "inplace", false) ? at::dropout_(x, p, train) : at::dropout(x, p, train);
}

at::Tensor batch_norm(A a) {
  return at::batch_norm(a.tensor(0, "input"), a.optional_tensor(3, "weight"), a.optional_tensor(4, "bias"),
                        a.optional_tensor(1, "running_mean"), a.optional_tensor(2, "running_var"),
                        a.bool_or(5, "training", false), a.double_or(6, "momentum", 0.1), a.double_or(7, "eps", 1e-5),
                        true);
}

at::Tensor embedding(A a) {
  at::Tensor weight = a.tensor(1, "weight");
  int64_t padding_idx = a.int_or(2, "padding_idx", -1);
  if (a.find(2, "padding_idx") != nullptr && padding_idx < 0) padding_idx += weight.size(0);
  TORCH_CHECK(a.find(3, "max_norm") == nullptr, "embedding with max_norm is not supported");
  return at::embedding(weight, a.tensor(0, "input"), padding_idx, a.bool_or(5, "scale_grad_by_freq", false),
                       a.bool_or(6, "sparse", false));
}

at::Tensor pad(A a) {
  at::Tensor x = a.tensor(0, "input");
  auto pads = a.int_list(1, "pad");
  const c10::IValue* mode = a.find(2, "mode");
  std::string m = mode ? mode->toStringRef() : "constant";
  double value = a.double_or(3, "value", 0.0);
  return at::pad(x, pads, m, m == "constant" ? c10::optional<double>(value) : c10::nullopt);
}

}  // namespace

void register_functional_ops() {
  OpRegistry::functions().add({
      {"torch.nn.functional.relu", [](A a) -> c10::IValue { return relu(a); }},
      {"torch.nn.functional.relu6", [](A a) -> c10::IValue { return hardtanh(a, 0.0, 6.0, 1); }},
      {"torch.nn.functional.hardtanh",
       [](A a) -> c10::IValue {
         return hardtanh(a, a.double_or(1, "min_val", -1.0), a.double_or(2, "max_val", 1.0), 3);
       }},
      {"torch.nn.functional.hardswish", unary_inplace<at::hardswish, at::hardswish_>},
      {"torch.nn.functional.hardsigmoid", unary_inplace<at::hardsigmoid, at::hardsigmoid_>},
      {"torch.nn.functional.silu", unary_inplace<at::silu, at::silu_>},
      {"torch.nn.functional.sigmoid", [](A a) -> c10::IValue { return at::sigmoid(a.tensor(0, "input")); }},
      {"torch.nn.functional.tanh", [](A a) -> c10::IValue { return at::tanh(a.tensor(0, "input")); }},
      {"torch.nn.functional.gelu",
       [](A a) -> c10::IValue {
         const c10::IValue* approximate = a.find(1, "approximate");
         return at::gelu(a.tensor(0, "input"), approximate ? approximate->toStringRef() : "none");
       }},
      {"torch.nn.functional.elu",
       [](A a) -> c10::IValue {
         at::Tensor x = a.tensor(0, "input");
         double alpha = a.double_or(1, "alpha", 1.0);
         return a.bool_or(2, "inplace", false) ? at::elu_(x, alpha) : at::elu(x, alpha);
       }},
      {"torch.nn.functional.leaky_relu",
       [](A a) -> c10::IValue {
         at::Tensor x = a.tensor(0, "input");
         double slope = a.double_or(1, "negative_slope", 0.01);
         return a.bool_or(2, "inplace", false) ? at::leaky_relu_(x, slope) : at::leaky_relu(x, slope);
       }},
      {"torch.nn.functional.prelu",
       [](A a) -> c10::IValue { return at::prelu(a.tensor(0, "input"), a.tensor(1, "weight")); }},
      {"torch.nn.functional.softmax", [](A a) -> c10::IValue { return softmax(a, false); }},
      {"torch.nn.functional.log_softmax", [](A a) -> c10::IValue { return softmax(a, true); }},
      {"torch.nn.functional.linear",
       [](A a) -> c10::IValue {
         return at::linear(a.tensor(0, "input"), a.tensor(1, "weight"), a.optional_tensor(2, "bias"));
       }},
      {"torch.nn.functional.conv1d", [](A a) -> c10::IValue { return convolution<1, false>(a); }},
      {"torch.nn.functional.conv2d", [](A a) -> c10::IValue { return convolution<2, false>(a); }},
      {"torch.nn.functional.conv3d", [](A a) -> c10::IValue { return convolution<3, false>(a); }},
      {"torch.nn.functional.conv_transpose1d", [](A a) -> c10::IValue { return convolution<1, true>(a); }},
      {"torch.nn.functional.conv_transpose2d", [](A a) -> c10::IValue { return convolution<2, true>(a); }},
      {"torch.nn.functional.conv_transpose3d", [](A a) -> c10::IValue { return convolution<3, true>(a); }},
      {"torch.nn.functional.interpolate", [](A a) -> c10::IValue { return interpolate(a); }},
      {"torch.nn.functional.pixel_shuffle",
       [](A a) -> c10::IValue { return at::pixel_shuffle(a.tensor(0, "input"), a.to_int(1, "upscale_factor")); }},
      {"torch.nn.functional.pixel_unshuffle",
       [](A a) -> c10::IValue { return at::pixel_unshuffle(a.tensor(0, "input"), a.to_int(1, "downscale_factor")); }},
      {"torch.nn.functional.channel_shuffle",
       [](A a) -> c10::IValue { return at::channel_shuffle(a.tensor(0, "input"), a.to_int(1, "groups")); }},
      {"torch.nn.functional.max_pool1d", [](A a) -> c10::IValue { return max_pool<1>(a); }},
      {"torch.nn.functional.max_pool2d", [](A a) -> c10::IValue { return max_pool<2>(a); }},
      {"torch.nn.functional.max_pool3d", [](A a) -> c10::IValue { return max_pool<3>(a); }},
      {"torch.nn.functional.avg_pool1d", [](A a) -> c10::IValue { return avg_pool<1>(a); }},
      {"torch.nn.functional.avg_pool2d", [](A a) -> c10::IValue { return avg_pool<2>(a); }},
      {"torch.nn.functional.avg_pool3d", [](A a) -> c10::IValue { return avg_pool<3>(a); }},
      {"torch.nn.functional.adaptive_avg_pool1d", [](A a) -> c10::IValue { return adaptive_avg_pool<1>(a); }},
      {"torch.nn.functional.adaptive_avg_pool2d", [](A a) -> c10::IValue { return adaptive_avg_pool<2>(a); }},
      {"torch.nn.functional.adaptive_avg_pool3d", [](A a) -> c10::IValue { return adaptive_avg_pool<3>(a); }},
      {"torch.nn.functional.dropout", [](A a) -> c10::IValue { return dropout(a); }},
      {"torch.nn.functional.layer_norm",
       [](A a) -> c10::IValue {
         return at::layer_norm(a.tensor(0, "input"), a.int_list(1, "normalized_shape"), a.optional_tensor(2, "weight"),
                               a.optional_tensor(3, "bias"), a.double_or(4, "eps", 1e-5));
       }},
      {"torch.nn.functional.group_norm",
       [](A a) -> c10::IValue {
         return at::group_norm(a.tensor(0, "input"), a.to_int(1, "num_groups"), a.optional_tensor(2, "weight"),
                               a.optional_tensor(3, "bias"), a.double_or(4, "eps", 1e-5));
       }},
      {"torch.nn.functional.batch_norm", [](A a) -> c10::IValue { return batch_norm(a); }},
      {"torch.nn.functional.instance_norm",
       [](A a) -> c10::IValue {
         return at::instance_norm(a.tensor(0, "input"), a.optional_tensor(3, "weight"), a.optional_tensor(4, "bias"),
                                  a.optional_tensor(1, "running_mean"), a.optional_tensor(2, "running_var"),
                                  a.bool_or(5, "use_input_stats", true), a.double_or(6, "momentum", 0.1),
                                  a.double_or(7, "eps", 1e-5), true);
       }},
      {"torch.nn.functional.embedding", [](A a) -> c10::IValue { return embedding(a); }},
      {"torch.nn.functional.pad", [](A a) -> c10::IValue { return pad(a); }},
  });
}

}  // namespace qfx::ir
