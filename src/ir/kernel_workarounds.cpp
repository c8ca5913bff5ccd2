// The workarounds of LibTorch 1.13's wrong quantized kernels, one switch for
// the interpreter and the export.

#include "qfx/ir/kernel_workarounds.h"

#include "qfx/ir/graph_module.h"
#include "qfx/ir/module_registry.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <atomic>
#include <set>
#include <utility>

namespace qfx::ir {
namespace {

std::atomic<bool>& enabled() {
  static std::atomic<bool> on{true};
  return on;
}

bool on_qnnpack() { return kernel_workarounds() && at::globalContext().qEngine() == at::QEngine::QNNPACK; }

/// The clamp family by opcode and target (a call_module's: its module type).
const std::set<std::pair<Opcode, std::string>>& clamp_family() {
  static const std::set<std::pair<Opcode, std::string>> kFamily = {
      {Opcode::kCallFunction, "torch.nn.functional.relu6"},
      {Opcode::kCallFunction, "torch.nn.functional.hardtanh"},
      {Opcode::kCallFunction, "torch.clamp"},
      {Opcode::kCallMethod, "clamp"},
      {Opcode::kCallModule, "torch.nn.ReLU6"},
      {Opcode::kCallModule, "torch.nn.Hardtanh"},
  };
  return kFamily;
}

/// F.avg_pool1d/2d's arguments: (input, kernel_size, stride, padding,
/// ceil_mode, count_include_pad, divisor_override), by position or name.
const Argument* avg_pool_arg(const Node& node, size_t index, const char* name) {
  if (index < node.args().size()) return &node.args()[index];
  return node.kwarg(name);
}

/// An int or a list of ints, `dims` of them; false when it is not constant.
bool constant_ints(const Argument* arg, int64_t dims, std::vector<int64_t>& out) {
  if (arg == nullptr || arg->is_none()) return true;  // the default
  out.clear();
  if (arg->kind() == Argument::Kind::kInt) out.assign(static_cast<size_t>(dims), arg->to_int());
  if (arg->kind() == Argument::Kind::kList || arg->kind() == Argument::Kind::kTuple) {
    for (const Argument& item : arg->items()) {
      if (item.kind() != Argument::Kind::kInt) return false;
      out.push_back(item.to_int());
    }
    if (out.size() == 1) out.assign(static_cast<size_t>(dims), out[0]);
  }
  return static_cast<int64_t>(out.size()) == dims;
}

bool constant_bool(const Argument* arg, bool& out) {
  if (arg == nullptr) return true;
  if (arg->kind() != Argument::Kind::kBool) return false;
  out = arg->to_bool();
  return true;
}

/// The options of an F.avg_pool1d/2d node; false when they are not constants.
bool avg_pool_node_options(const Node& node, int64_t dims, AvgPoolOptions& o) {
  if (!constant_ints(avg_pool_arg(node, 1, "kernel_size"), dims, o.kernel) || o.kernel.empty()) return false;
  o.stride = o.kernel;
  o.padding.assign(static_cast<size_t>(dims), 0);
  const Argument* divisor = avg_pool_arg(node, 6, "divisor_override");
  if (divisor != nullptr && !divisor->is_none()) {
    if (divisor->kind() != Argument::Kind::kInt) return false;
    o.divisor_override = divisor->to_int();
  }
  return constant_ints(avg_pool_arg(node, 2, "stride"), dims, o.stride) &&
         constant_ints(avg_pool_arg(node, 3, "padding"), dims, o.padding) &&
         constant_bool(avg_pool_arg(node, 4, "ceil_mode"), o.ceil_mode) &&
         constant_bool(avg_pool_arg(node, 5, "count_include_pad"), o.count_include_pad);
}

/// A LibTorch op by name, its first output.
c10::IValue call_boxed_op(const char* name, std::vector<c10::IValue> args) {
  c10::Dispatcher::singleton().findSchemaOrThrow(name, "").callBoxed(&args);
  return std::move(args.at(0));
}

/// 255 x 127 + 255 x 127 = 64770 per pair, beyond int16: a saturating kernel
/// gives about half the exact output (in steps of 2^14, 126 against 64).
bool onednn_linear_saturates() {
  at::Tensor x = at::quantize_per_tensor(at::full({8, 64}, 255.0), 1.0, 0, at::kQUInt8);
  at::Tensor w = at::quantize_per_tensor(at::full({16, 64}, 127.0), 1.0, 0, at::kQInt8);
  c10::IValue packed = call_boxed_op("quantized::linear_prepack", {w, c10::IValue()});
  at::Tensor y = call_boxed_op("quantized::linear", {x, packed, 16384.0, int64_t{0}}).toTensor();
  at::Tensor exact = at::quantize_per_tensor(at::linear(x.dequantize(), w.dequantize()), 16384.0, 0, at::kQUInt8);
  return (y.int_repr().to(at::kInt) - exact.int_repr().to(at::kInt)).abs().max().item<int>() > 1;
}

/// The engine made onednn while measuring, then put back.
bool probe_onednn_saturation() {
  at::QEngine previous = at::globalContext().qEngine();
  at::globalContext().setQEngine(at::QEngine::ONEDNN);
  bool saturates = false;
  try {
    saturates = onednn_linear_saturates();
  } catch (const c10::Error&) {  // no onednn engine: nothing saturates
  }
  at::globalContext().setQEngine(previous);
  return saturates;
}

/// `x.unsqueeze(-1).unsqueeze(-1).transpose(1, -1)`, or its inverse.
at::Tensor memory_order_view(const at::Tensor& x) { return x.unsqueeze(-1).unsqueeze(-1).transpose(1, -1); }
at::Tensor logical_view(const at::Tensor& x) { return x.transpose(1, -1).squeeze(-1).squeeze(-1); }

}  // namespace

bool kernel_workarounds() { return enabled().load(); }

void set_kernel_workarounds(bool on) { enabled().store(on); }

at::Tensor clamp_in_memory_order(const at::Tensor& x, const std::function<at::Tensor(const at::Tensor&)>& clamp) {
  if (!x.is_quantized() || !on_qnnpack()) return clamp(x);
  return logical_view(clamp(memory_order_view(x)));
}

bool onednn_saturates() {
  static const bool saturates = probe_onednn_saturation();
  return saturates;
}

bool avg_pool_needs_ceil_mode(int64_t dims, const AvgPoolOptions& options) {
  if (dims > 2 || options.ceil_mode || !on_qnnpack()) return false;
  bool padded = false;
  for (int64_t p : options.padding) padded = padded || p > 0;
  return (padded && !options.count_include_pad) || options.divisor_override.has_value();
}

at::Tensor avg_pool(int64_t dims, const at::Tensor& x, const AvgPoolOptions& o) {
  auto pool = [&](bool ceil_mode) {
    if (dims == 1) return at::avg_pool1d(x, o.kernel, o.stride, o.padding, ceil_mode, o.count_include_pad);
    if (dims == 2)
      return at::avg_pool2d(x, o.kernel, o.stride, o.padding, ceil_mode, o.count_include_pad, o.divisor_override);
    return at::avg_pool3d(x, o.kernel, o.stride, o.padding, ceil_mode, o.count_include_pad, o.divisor_override);
  };
  if (!x.is_quantized() || x.scalar_type() != at::kQUInt8 || !avg_pool_needs_ceil_mode(dims, o))
    return pool(o.ceil_mode);
  at::Tensor y = pool(true);
  for (int64_t i = 0; i < dims; ++i) {
    int64_t dim = x.dim() - dims + i;
    y = y.narrow(dim, 0, (x.size(dim) + 2 * o.padding[i] - o.kernel[i]) / o.stride[i] + 1);
  }
  return y;
}

std::string avg_pool_floor_size(int64_t dims, int64_t i, const AvgPoolOptions& o, const std::string& x) {
  return "(" + x + ".size(" + std::to_string(i - dims) + ") + " + std::to_string(2 * o.padding[i] - o.kernel[i]) +
         ") // " + std::to_string(o.stride[i]) + " + 1";
}

bool is_clamp_family(const GraphModule& gm, const Node& node) {
  if (node.op() == Opcode::kCallModule)
    return clamp_family().count({node.op(), module_type_name(*gm.get_submodule(node.target()))}) != 0;
  return clamp_family().count({node.op(), node.target()}) != 0;
}

void avg_pool_in_ceil_mode(Graph& graph, Node& node) {
  static const std::pair<const char*, int64_t> kPools[] = {{"torch.nn.functional.avg_pool1d", 1},
                                                           {"torch.nn.functional.avg_pool2d", 2}};
  int64_t dims = 0;
  for (const auto& [target, d] : kPools) dims = node.target() == target ? d : dims;
  AvgPoolOptions o;
  if (node.op() != Opcode::kCallFunction || dims == 0 || node.args().empty() || !node.args()[0].is_node() ||
      !avg_pool_node_options(node, dims, o) || !avg_pool_needs_ceil_mode(dims, o))
    return;
  if (node.args().size() > 4) {
    node.set_arg(4, true);
  } else {
    node.set_kwarg("ceil_mode", true);
  }
  Node* input = node.args()[0].to_node();
  auto guard = graph.inserting_after(&node);
  Node* out = &node;
  Node* first = nullptr;
  for (int64_t i = 0; i < dims; ++i) {  // each pooled dimension narrowed to its floor-mode size
    Node* size = graph.call_method("size", {input, i - dims});
    Node* padded = graph.call_function("operator.add", {size, 2 * o.padding[i] - o.kernel[i]});
    Node* windows = graph.call_function("operator.floordiv", {padded, o.stride[i]});
    Node* length = graph.call_function("operator.add", {windows, int64_t{1}});
    out = graph.call_method("narrow", {out, i - dims, int64_t{0}, length});
    if (first == nullptr) first = out;
  }
  node.replace_all_uses_with(out, [&](Node* user) { return user != first; });
}

void clamp_in_memory_order(Graph& graph, Node& node) {
  if (!on_qnnpack() || node.args().empty() || !node.args()[0].is_node()) return;
  Node* input = node.args()[0].to_node();
  Node* view = nullptr;
  {
    auto guard = graph.inserting_before(&node);
    view = graph.call_method("unsqueeze", {input, int64_t{-1}});
    view = graph.call_method("unsqueeze", {view, int64_t{-1}});
    view = graph.call_method("transpose", {view, int64_t{1}, int64_t{-1}});
  }
  node.replace_input_with(input, view);
  auto guard = graph.inserting_after(&node);
  Node* back = graph.call_method("transpose", {&node, int64_t{1}, int64_t{-1}});
  Node* logical = graph.call_method("squeeze", {graph.call_method("squeeze", {back, int64_t{-1}}), int64_t{-1}});
  node.replace_all_uses_with(logical, [&](Node* user) { return user != back; });
}

}  // namespace qfx::ir
