// The export's example runs: the model run on the example inputs gives every
// tensor's sizes and dtype; with a symbolic batch, a second run with one more
// batch row tells the numbers that do not depend on the batch (a channel
// count, an image side, an arithmetic of them) from those that do. Those and
// what is computed from parameters alone are known at export time: the
// export writes them as constants, as the ONNX model's declared input shape
// (only the batch symbolic) fixes them anyway. A model that does not run with
// one more row (inputs whose dim 0 is no batch, such as offsets) keeps every
// size a run-time value.

#include "onnx_rules.h"

#include "qfx/ir/interpreter.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <optional>
#include <set>

namespace qfx::io::onnx_export {
namespace {

/// Targets kept out of the folding: a weight quantized in the graph stays
/// an int8 initializer with its qparams (onnx_functions.cpp, quantize).
const std::set<std::string>& kept_targets() {
  static const std::set<std::string> kKept = {"torch.quantize_per_tensor", "torch.quantize_per_channel",
                                              "torch.quantize_per_tensor_dynamic", "torch.dequantize", "dequantize"};
  return kKept;
}

/// x.size(), x.dim(), x.numel(), x.shape, x.ndim: numbers about a tensor's sizes.
bool reads_sizes(const ir::Node& node) {
  if (node.op() == ir::Opcode::kCallMethod) {
    return node.target() == "size" || node.target() == "dim" || node.target() == "numel";
  }
  if (node.op() != ir::Opcode::kCallFunction || node.target() != "builtins.getattr" || node.args().size() < 2) {
    return false;
  }
  const ir::Argument& name = node.args()[1];
  return name.kind() == ir::Argument::Kind::kString && (name.to_string() == "shape" || name.to_string() == "ndim");
}

/// x.new_zeros(size), x.new_ones(size), x.new_full(size, value): of `x`
/// only its dtype and device count.
bool creates_from_sizes(const ir::Node& node) {
  return node.op() == ir::Opcode::kCallMethod &&
         (node.target() == "new_zeros" || node.target() == "new_ones" || node.target() == "new_full");
}

/// Whether `node` may be known at export time, given the nodes known so far:
/// get_attr, and a function or method (not a quantize/dequantize) that reads
/// sizes or whose inputs are all known (but for the tensor a new_zeros is
/// called on).
bool may_be_known(const ir::Node& node, const std::unordered_map<const ir::Node*, c10::IValue>& known) {
  if (node.op() == ir::Opcode::kGetAttr) return true;
  if (node.op() != ir::Opcode::kCallFunction && node.op() != ir::Opcode::kCallMethod) return false;
  if (kept_targets().count(node.target())) return false;
  if (reads_sizes(node)) return true;
  bool on_self = creates_from_sizes(node) && !node.args().empty() && node.args()[0].is_node();
  const ir::Node* self = on_self ? node.args()[0].to_node() : nullptr;
  std::vector<ir::Node*> inputs = node.input_nodes();
  return std::all_of(inputs.begin(), inputs.end(), [&](const ir::Node* n) { return n == self || known.count(n) > 0; });
}

/// Whether two runs' values are the same (tensors by sizes, dtype and elements).
bool same(const c10::IValue& a, const c10::IValue& b) {
  if (a.isTensor() != b.isTensor()) return false;
  if (a.isTensor()) {
    const at::Tensor &x = a.toTensor(), &y = b.toTensor();
    if (x.sizes() != y.sizes() || x.scalar_type() != y.scalar_type()) return false;
    return x.is_quantized() ? at::equal(x.int_repr(), y.int_repr()) && at::equal(x.dequantize(), y.dequantize())
                            : at::equal(x, y);
  }
  if (a.isTuple() || a.isList()) {
    std::vector<c10::IValue> xs = a.isTuple() ? a.toTupleRef().elements().vec() : a.toListRef().vec();
    std::vector<c10::IValue> ys;
    if (b.isTuple()) ys = b.toTupleRef().elements().vec();
    if (b.isList()) ys = b.toListRef().vec();
    if (xs.size() != ys.size()) return false;
    for (size_t i = 0; i < xs.size(); ++i) {
      if (!same(xs[i], ys[i])) return false;
    }
    return true;
  }
  return a == b;
}

/// The dtype the export gives a value: a tensor's own; int64 for a Python
/// int, float for a Python float, bool for a bool.
std::optional<c10::ScalarType> dtype_of(const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor().scalar_type();
  if (v.isInt()) return at::kLong;
  if (v.isDouble()) return at::kFloat;
  if (v.isBool()) return at::kBool;
  return std::nullopt;
}

/// `inputs` with one more batch row: each tensor's first row appended along dim 0.
std::vector<c10::IValue> one_more_row(const std::vector<c10::IValue>& inputs) {
  std::vector<c10::IValue> out;
  for (const c10::IValue& v : inputs) {
    if (v.isTensor() && v.toTensor().dim() > 0 && v.toTensor().size(0) > 0) {
      const at::Tensor& t = v.toTensor();
      out.emplace_back(at::cat({t, t.narrow(0, 0, 1)}, 0));
    } else {
      out.push_back(v);
    }
  }
  return out;
}

}  // namespace

ExampleRun run_example(const ir::GraphModule& gm, const std::vector<c10::IValue>& inputs, bool dynamic_batch) {
  ExampleRun run;
  run.dynamic_batch = dynamic_batch;
  ir::Interpreter first(gm);
  first.set_node_hook([&](const ir::Node& node, const c10::IValue& value) {
    if (auto dtype = dtype_of(value)) run.dtypes[&node] = *dtype;
    if (value.isTensor()) run.shapes[&node] = value.toTensor().sizes().vec();
    if (!may_be_known(node, run.known)) return;
    // a copy: a later in-place op (setitem) must not change the value compared with the second run
    bool computed = node.op() != ir::Opcode::kGetAttr && value.isTensor();
    run.known[&node] = computed ? c10::IValue(value.toTensor().clone()) : value;
  });
  run.output = first.run(inputs);
  if (!dynamic_batch) return run;

  std::unordered_map<const ir::Node*, c10::IValue> known;
  ir::Interpreter second(gm);
  second.set_node_hook([&](const ir::Node& node, const c10::IValue& value) {
    auto it = run.known.find(&node);
    if (it != run.known.end() && may_be_known(node, known) && same(it->second, value)) known.insert(*it);
  });
  try {
    second.run(one_more_row(inputs));
  } catch (const c10::Error&) {  // inputs whose dim 0 is no batch (offsets): no size is known
    known.clear();
    for (const ir::Node* node : gm.graph().nodes()) {
      auto it = run.known.find(node);
      if (it != run.known.end() && !reads_sizes(*node) && may_be_known(*node, known)) known.insert(*it);
    }
  }
  run.known = std::move(known);
  return run;
}

}  // namespace qfx::io::onnx_export
