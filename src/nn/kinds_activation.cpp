// Module kinds: activations, with Python's extra_repr.

#include "module_kinds.h"

#include "qfx/ir/kernel_workarounds.h"
#include "qfx/nn/activation.h"

#include <torch/nn/modules/activation.h>

#include <utility>

namespace qfx::nn {
namespace {

using detail::add_inplace_kind;
using detail::add_kind;
using detail::as;
using detail::py_float;

std::string inplace_only(bool inplace) { return inplace ? "inplace=True" : ""; }
std::string inplace_suffix(bool inplace) { return inplace ? ", inplace=True" : ""; }
std::string no_repr(const torch::nn::Module&) { return ""; }

// qfx's activations out of place, whatever their `inplace`.
template <typename Impl>
at::Tensor activation_fresh(const Impl&, const at::Tensor& x) {
  return Impl::out_of_place(x);
}

std::pair<double, double> hardtanh_range(const torch::nn::ReLU6Impl&) { return {0.0, 6.0}; }
std::pair<double, double> hardtanh_range(const torch::nn::HardtanhImpl& m) {
  return {m.options.min_val(), m.options.max_val()};
}

// nn.ReLU6 and nn.Hardtanh out of place, on the memory-order view where
// qnnpack's kernel needs it (ir::clamp_in_memory_order).
template <typename Impl>
at::Tensor hardtanh_fresh(const Impl& m, const at::Tensor& x) {
  const std::pair<double, double> range = hardtanh_range(m);  // not bound: clang 14 cannot capture bindings
  return ir::clamp_in_memory_order(x, [&](const at::Tensor& v) { return at::hardtanh(v, range.first, range.second); });
}

// Their forward: in place when the module says so, on the same view.
template <typename Impl>
ir::ModuleForward hardtanh_forward() {
  return [](torch::nn::Module& module, std::vector<c10::IValue>& in) -> c10::IValue {
    const auto& m = dynamic_cast<const Impl&>(module);
    at::Tensor x = detail::only_tensor_input(module, in);
    if (!m.options.inplace()) return hardtanh_fresh(m, x);
    const std::pair<double, double> range = hardtanh_range(m);
    ir::clamp_in_memory_order(x, [&](at::Tensor v) { return at::hardtanh_(v, range.first, range.second); });
    return x;
  };
}

}  // namespace

void register_activation_kinds() {
  add_inplace_kind<torch::nn::ReLUImpl>(
      "torch.nn.ReLU",
      [](const torch::nn::Module& m) { return inplace_only(as<torch::nn::ReLUImpl>(m).options.inplace()); },
      [](const torch::nn::ReLUImpl&, const at::Tensor& x) { return at::relu(x); });
  add_inplace_kind<torch::nn::ReLU6Impl>(
      "torch.nn.ReLU6",
      [](const torch::nn::Module& m) { return inplace_only(as<torch::nn::ReLU6Impl>(m).options.inplace()); },
      hardtanh_fresh<torch::nn::ReLU6Impl>, hardtanh_forward<torch::nn::ReLU6Impl>());
  add_inplace_kind<torch::nn::HardtanhImpl>(
      "torch.nn.Hardtanh",
      [](const torch::nn::Module& m) {
        const auto& o = as<torch::nn::HardtanhImpl>(m).options;
        return "min_val=" + py_float(o.min_val()) + ", max_val=" + py_float(o.max_val()) + inplace_suffix(o.inplace());
      },
      hardtanh_fresh<torch::nn::HardtanhImpl>, hardtanh_forward<torch::nn::HardtanhImpl>());
  add_inplace_kind<HardswishImpl>("torch.nn.Hardswish", no_repr, activation_fresh<HardswishImpl>);
  add_inplace_kind<HardsigmoidImpl>("torch.nn.Hardsigmoid", no_repr, activation_fresh<HardsigmoidImpl>);
  add_inplace_kind<SiLUImpl>(
      "torch.nn.SiLU", [](const torch::nn::Module& m) { return inplace_only(as<SiLUImpl>(m).options.inplace()); },
      activation_fresh<SiLUImpl>);
  add_kind<torch::nn::GELUImpl>("torch.nn.GELU", [](const torch::nn::Module& m) {
    return "approximate=" + ir::python_str_repr(as<torch::nn::GELUImpl>(m).options.approximate());
  });
  add_kind<torch::nn::SigmoidImpl>("torch.nn.Sigmoid", no_repr);
  add_kind<torch::nn::TanhImpl>("torch.nn.Tanh", no_repr);
  add_inplace_kind<torch::nn::LeakyReLUImpl>(
      "torch.nn.LeakyReLU",
      [](const torch::nn::Module& m) {
        const auto& o = as<torch::nn::LeakyReLUImpl>(m).options;
        return "negative_slope=" + py_float(o.negative_slope()) + inplace_suffix(o.inplace());
      },
      [](const torch::nn::LeakyReLUImpl& m, const at::Tensor& x) {
        return at::leaky_relu(x, m.options.negative_slope());
      });
  add_inplace_kind<torch::nn::ELUImpl>(
      "torch.nn.ELU",
      [](const torch::nn::Module& m) {
        const auto& o = as<torch::nn::ELUImpl>(m).options;
        return "alpha=" + py_float(o.alpha()) + inplace_suffix(o.inplace());
      },
      [](const torch::nn::ELUImpl& m, const at::Tensor& x) { return at::elu(x, m.options.alpha()); });
  add_kind<torch::nn::PReLUImpl>("torch.nn.PReLU", [](const torch::nn::Module& m) {
    return "num_parameters=" + std::to_string(as<torch::nn::PReLUImpl>(m).options.num_parameters());
  });
  add_kind<torch::nn::SoftmaxImpl>("torch.nn.Softmax", [](const torch::nn::Module& m) {
    return "dim=" + std::to_string(as<torch::nn::SoftmaxImpl>(m).options.dim());
  });
}

}  // namespace qfx::nn
