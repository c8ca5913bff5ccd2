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

#include <ATen/core/Tensor.h>

#include <functional>

namespace qfx::ir {

class GraphModule;
class Graph;
class Node;

/// Whether the workarounds apply (default true).
bool kernel_workarounds();
void set_kernel_workarounds(bool on);

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
