#pragma once
/// \file
/// Workarounds for LibTorch 1.13 quantized kernels that compute wrong values
/// (the kernel audit in docs/divergences.md; tests/oracle/kernel_audit.py).
/// qnnpack's clamp family (`hardtanh`, `clamp`, `relu6`, nn.ReLU6,
/// nn.Hardtanh) reads a channels_last quantized tensor (what every qnnpack
/// convolution returns) as if it were contiguous: up to 120 quantization
/// steps off, a ReLU6 network falls to chance. The clamp is elementwise, so
/// qfx runs it on a view in which the tensor's memory is contiguous:
/// `op(x.unsqueeze(-1).unsqueeze(-1).transpose(1, -1)).transpose(1, -1)
/// .squeeze(-1).squeeze(-1)` — the same values, no copy, any rank (the
/// view's size-1 dimensions leave `is_contiguous` to the memory order). The
/// interpreter's ops and modules and the TorchScript export (on the qnnpack
/// engine) apply it; set_kernel_workarounds(false) turns it off, for tests
/// that show what the accuracy tools make of the faulty kernels.
///
/// qnnpack's quint8 `avg_pool2d` (and `avg_pool1d`, which runs it) ignores
/// `count_include_pad=False` and `divisor_override` (up to 154 steps off);
/// LibTorch takes it only with `ceil_mode=False`. qfx pools with
/// `ceil_mode=True` and narrows each pooled dimension to its floor-mode size:
/// the windows, and their divisors, are the same.
///
/// A quantized InstanceNorm converted from one that tracks running stats
/// computes with its input's statistics in PyTorch 1.13 (its `from_float`
/// drops the running stats), not with the running stats the float module
/// uses in eval; qfx lowers it to `quantized::batch_norm` with them
/// (nn/quantized.h), while the workarounds are on.

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

#include <functional>
#include <string>
#include <vector>

namespace qfx::ir {

class GraphModule;
class Graph;
class Node;

/// Whether LibTorch's onednn int8 convolutions and linears saturate on this
/// CPU. Without VNNI (AVX512-VNNI, AVX-VNNI) oneDNN adds the u8 x s8 products
/// of an activation and a weight pair by pair in 16 bits (`vpmaddubsw`), which
/// saturate once a pair exceeds 32767: with full-range 8-bit weights and
/// activations (PyTorch 1.13's onednn qconfigs) outputs are tens of steps off.
/// PyTorch 1.13 alike; qnnpack's kernels and depthwise convolutions do not
/// saturate. Measured once per process on a linear whose exact result needs
/// 17 bits per pair.
bool onednn_saturates();

/// Whether the workarounds apply (default true).
bool kernel_workarounds();
void set_kernel_workarounds(bool on);

/// The options of an avg_pool1d/2d/3d call.
struct AvgPoolOptions {
  std::vector<int64_t> kernel, stride, padding;  ///< one per pooled dimension
  bool ceil_mode = false;
  bool count_include_pad = true;
  c10::optional<int64_t> divisor_override;
};

/// The options of an nn.AvgPool{1,2,3}d (its `options`).
template <typename Options>
AvgPoolOptions avg_pool_options(const Options& o) {
  AvgPoolOptions out;
  out.kernel = c10::IntArrayRef(*o.kernel_size()).vec();
  out.stride = c10::IntArrayRef(*o.stride()).vec();
  out.padding = c10::IntArrayRef(*o.padding()).vec();
  out.ceil_mode = o.ceil_mode();
  out.count_include_pad = o.count_include_pad();
  out.divisor_override = o.divisor_override();
  return out;
}

/// Whether an avg pool over `dims` dimensions with `options` would run into
/// qnnpack's faulty path on the current engine (whatever the input's dtype:
/// the export does not know it). False with the workarounds off.
bool avg_pool_needs_ceil_mode(int64_t dims, const AvgPoolOptions& options);

/// The avg pool (at::avg_pool1d/2d/3d), with the ceil-mode workaround for a
/// quint8 input when needed.
at::Tensor avg_pool(int64_t dims, const at::Tensor& x, const AvgPoolOptions& options);

/// The size of pooled dimension `i` in floor mode, as a Python expression on
/// the input named `x` (for the export): `(x.size(-2) + 2 - 3) // 1 + 1`.
std::string avg_pool_floor_size(int64_t dims, int64_t i, const AvgPoolOptions& options, const std::string& x);

/// The same in a graph (for an export): a call of F.avg_pool1d/2d with
/// constant options that avg_pool_needs_ceil_mode pools in ceil mode and
/// narrows its output to the floor-mode sizes. A call whose options are not
/// constants is left as it is.
void avg_pool_in_ceil_mode(Graph& graph, Node& node);

/// `clamp(x)` for an elementwise clamp-family op: on a quantized tensor on
/// the qnnpack engine, on the memory-order view; else as it is.
at::Tensor clamp_in_memory_order(const at::Tensor& x, const std::function<at::Tensor(const at::Tensor&)>& clamp);

/// Whether `node` runs a clamp-family op: F.relu6, F.hardtanh, torch.clamp,
/// Tensor.clamp, or a call of an nn.ReLU6 / nn.Hardtanh of `gm`.
bool is_clamp_family(const GraphModule& gm, const Node& node);

/// The same in a graph (for an export, whose file runs on LibTorch's
/// kernels): on the qnnpack engine, with the workarounds on, `node`'s input
/// becomes the memory-order view of it, and its users read the view of its
/// output back. A view of a float tensor computes the same, so the rewrite
/// needs no dtypes.
void clamp_in_memory_order(Graph& graph, Node& node);

}  // namespace qfx::ir
