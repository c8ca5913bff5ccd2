#pragma once
// The ONNX export's rule tables: for each call_function target, call_method
// name and module class of a float or reference quantized graph, the ONNX
// nodes it becomes. A rule reads the node's arguments as export Values
// (onnx_graph.h) and returns the Value of the node's output; a node no rule
// covers is an error naming it.

#include "onnx_graph.h"

#include "qfx/ir/graph_module.h"
#include "qfx/ir/node.h"

#include <torch/nn/module.h>

#include <functional>
#include <map>
#include <tuple>
#include <string>
#include <unordered_map>
#include <vector>

namespace qfx::nn {
class QuantizedLSTMImpl;
class ReferenceRNNImpl;
}  // namespace qfx::nn

namespace qfx::io::onnx_export {

/// What the example run told about a node's output: its sizes (rank and
/// extents) when it is a tensor.
using NodeShapes = std::unordered_map<const ir::Node*, std::vector<int64_t>>;

/// What the example runs tell the export about the graph's nodes.
struct ExampleRun {
  NodeShapes shapes;  ///< each tensor value's sizes on the example input
  /// The dtype of each value the export holds as a tensor: a tensor's own,
  /// int64 for a Python int (a size), float for a float, bool for a bool.
  std::unordered_map<const ir::Node*, c10::ScalarType> dtypes;
  /// Values known at export time, written as constants: get_attr, and
  /// functions and methods (not quantize or dequantize) of known values or
  /// of sizes (x.size(), x.dim(), x.numel(), x.shape) that come out the
  /// same with one more batch row (with a symbolic batch).
  std::unordered_map<const ir::Node*, c10::IValue> known;
  c10::IValue output;         ///< the model's output on the example input
  bool dynamic_batch = true;  ///< dim 0 of inputs and outputs is the symbolic `batch`
};

/// Runs `gm` on `inputs`, and with `dynamic_batch` again with one more batch
/// row (no size is known when that run fails); c10::Error when the first fails.
ExampleRun run_example(const ir::GraphModule& gm, const std::vector<c10::IValue>& inputs, bool dynamic_batch);

/// State shared by all nodes of one export.
struct ExportState {
  OnnxGraph& graph;
  const ir::GraphModule& gm;
  const ExampleRun& run;
  /// Initializers made from a LibTorch tensor, by its data, dtype and sizes,
  /// so a weight used twice is stored once; each with the tensor, kept alive
  /// so that its address is not reused by another one during the export.
  std::map<std::tuple<const void*, int64_t, std::vector<int64_t>>, std::pair<std::string, at::Tensor>> constants;
};

/// One node being exported: its arguments as Values.
class Context {
 public:
  Context(ExportState& state, const ir::Node& node, std::vector<Value> args, std::map<std::string, Value> kwargs)
      : state_(state), node_(node), args_(std::move(args)), kwargs_(std::move(kwargs)) {}

  /// The same node with other arguments (the modules of a fused module in turn).
  Context with_args(std::vector<Value> args) const { return Context(state_, node_, std::move(args), {}); }
  /// The state of an export into `graph`, a subgraph (a Loop's body), and
  /// this node's context there.
  ExportState subgraph_state(OnnxGraph& graph) const { return ExportState{graph, state_.gm, state_.run, {}}; }
  Context in_graph(ExportState& state) const { return Context(state, node_, args_, kwargs_); }

  OnnxGraph& g() const { return state_.graph; }
  const ir::GraphModule& gm() const { return state_.gm; }
  const ir::Node& node() const { return node_; }
  /// The name ONNX tensors of this node are named after.
  const std::string& hint() const { return node_.name(); }

  /// Argument `index`, or keyword `keyword`; a kNone Value when absent.
  const Value& arg(size_t index, const char* keyword = nullptr) const;
  size_t num_args() const { return args_.size(); }

  /// The ONNX tensor of `v` for a float op: a DequantizeLinear of its own
  /// for each use of a dequantized value (ONNX Runtime fuses a
  /// DequantizeLinear only into its one consumer), an initializer for a constant.
  std::string tensor(const Value& v) const;
  /// An initializer for `t`, shared by every use of the same tensor.
  std::string constant(const std::string& hint, const at::Tensor& t) const;
  /// The integer or integer list `v` holds; c10::Error naming the node otherwise.
  int64_t int_of(const Value& v) const;
  std::vector<int64_t> ints_of(const Value& v) const;
  double double_of(const Value& v) const;
  /// The sizes of the node's output or of input node `input` in the example run.
  const std::vector<int64_t>& shape() const { return shape_of(&node_); }
  /// False under --static-batch: dim 0 is the example's, as every other.
  bool dynamic_batch() const { return state_.run.dynamic_batch; }
  const std::vector<int64_t>& shape_of(const ir::Node* node) const;
  /// The dtype of node `node`'s value in the example run (ExampleRun::dtypes).
  c10::ScalarType dtype_of(const ir::Node* node) const;
  /// Argument `index`'s node; c10::Error naming the node when it is no node.
  const ir::Node* arg_node(size_t index) const;
  /// The sizes and the rank of argument `index` (a node) in the example run.
  const std::vector<int64_t>& shape_of_arg(size_t index) const { return shape_of(arg_node(index)); }
  int64_t rank_of_arg(size_t index) const { return static_cast<int64_t>(shape_of_arg(index).size()); }

  /// c10::Error "ONNX export: node %name (target): what".
  [[noreturn]] void fail(const std::string& what) const;

 private:
  ExportState& state_;
  const ir::Node& node_;
  std::vector<Value> args_;
  std::map<std::string, Value> kwargs_;
};

using Rule = std::function<Value(const Context&)>;

/// The ONNX tensor of a weight (transposed 2-d when `transpose`): an
/// initializer, dequantized (a quantized weight's integers with its qparams)
/// or cast to float (float16) when it is not float.
std::string weight_input(const Context& c, const at::Tensor& weight, bool transpose, const std::string& hint);

/// Rules by call_function target (`torch.add`, `operator.add`, `torch.nn.functional.relu`, ...).
const std::map<std::string, Rule>& function_rules();
/// Rules by call_method name (`dequantize`, `view`, `size`, ...).
const std::map<std::string, Rule>& method_rules();
/// The ONNX form of a call to `module` (at `path`); c10::Error naming the
/// node and the module's class when it has none.
Value module_value(const Context& c, const torch::nn::Module& module, const std::string& path);

/// torch's convolution arguments (ConvNd, ConvTransposeNd, F.convNd).
struct ConvSpec {
  std::vector<int64_t> stride, padding, dilation, output_padding;
  int64_t groups = 1;
  bool transposed = false;
  std::string padding_mode = "zeros";  ///< or "same" / "valid" (string paddings)
};
/// A convolution of `x` with `weight` (float, half or a quantized tensor:
/// integers dequantized by a DequantizeLinear) and `bias` (may be undefined).
/// A quantized weight's bias is int32 with scale input scale x weight scale
/// when `x` is dequantized per tensor, as ONNX Runtime's QDQ fusion asks.
Value conv(const Context& c, const Value& x, const at::Tensor& weight, const at::Tensor& bias, const ConvSpec& spec);
/// `x @ weight.T + bias`: Gemm for a 2-d input, MatMul and Add otherwise.
Value linear(const Context& c, const Value& x, const at::Tensor& weight, const at::Tensor& bias);
/// `weight[indices]` (Embedding): Gather from the (dequantized) weight.
Value embedding(const Context& c, const Value& indices, const at::Tensor& weight);

/// torch.nn.LSTM, GRU, RNN, LSTMCell, GRUCell or RNNCell `float_module`
/// (with the quantized weights of `reference` when given): ONNX's LSTM, GRU
/// or RNN ops, one per layer.
Value recurrent(const Context& c, const torch::nn::Module& float_module,
                const nn::ReferenceRNNImpl* reference = nullptr);

/// torch.ao.nn.quantized.LSTM `lstm` (the static custom module): each cell's
/// first step and a Loop over the other steps (any sequence length), each
/// quantized kernel a float op between DequantizeLinear and QuantizeLinear
/// with its output qparams.
Value quantized_lstm(const Context& c, const nn::QuantizedLSTMImpl& lstm);

/// nn.MultiheadAttention (nn::MultiheadAttention, eval mode, no masks): its
/// (output, weights), or its output alone, as ONNX ops.
Value multihead_attention(const Context& c, const torch::nn::Module& module);

/// nn.TransformerEncoder or TransformerEncoderLayer (nn::TransformerEncoder(Layer),
/// eval mode, no masks): its layers as ONNX ops.
Value transformer_encoder(const Context& c, const torch::nn::Module& module);
/// GELU (erf form) of float tensor `x`: 0.5 x (1 + erf(x / sqrt(2))).
std::string gelu(const Context& c, const std::string& x);

/// EmbeddingBag with mode sum or mean of `weight`'s rows: the gathered rows
/// (times per_sample_weights) reduced per bag: a 2-d input's rows, or with
/// offsets a product with the bags' 0/1 membership matrix.
Value embedding_bag(const Context& c, const at::Tensor& weight, bool mean, bool include_last_offset);

/// `x[index]` for a tensor `x` and an index of integers, slices, None and
/// `...` (one, or a tuple of them) known at export time: Gather, Slice and
/// Unsqueeze ops; a per-tensor quantized `x` keeps its qparams.
Value index_tensor(const Context& c, const Value& x, const Value& index);

/// ONNX's pads (begins, then ends) for torch's symmetric padding.
std::vector<int64_t> both_sides(std::vector<int64_t> pads);

/// Element-wise and other shared emitters used by both tables.
Value unary(const Context& c, const std::string& op_type, const std::vector<Attr>& attrs = {});
/// `op(x)` on float tensor name `x` for activation module types shared with
/// functions (hardswish, relu6, ...): returns the output name.
/// clamp(argument 0, min, max). On a dequantized value whose one user
/// quantizes it again with the same qparams (ReLU6 and hardtanh share their
/// input's qparams), a Clip of the integers between the quantized bounds,
/// the same values without leaving uint8 (ONNX Runtime has no fused kernel
/// for DequantizeLinear -> Clip -> QuantizeLinear); a float Clip otherwise.
Value clip(const Context& c, double min, double max);
std::string hardswish(const Context& c, const std::string& x);
std::string hardsigmoid(const Context& c, const std::string& x);
/// torch.nn.functional's weighted and normalizing ops, clamp and the shape
/// ops that make lists or change ranks: by call_function target and method name.
const std::map<std::string, Rule>& functional_rules();
const std::map<std::string, Rule>& functional_method_rules();
/// quantize_per_tensor / _per_channel / _dynamic, dequantize and `to`: by
/// call_function target and method name.
const std::map<std::string, Rule>& quantize_rules();
const std::map<std::string, Rule>& quantize_method_rules();
/// +, -, *, /, //, %, @ and comparisons (Python's operators and torch's
/// functions and methods), torch._assert: by call_function target and method name.
const std::map<std::string, Rule>& arithmetic_rules();
const std::map<std::string, Rule>& arithmetic_method_rules();
/// pixel_shuffle, pixel_unshuffle, channel_shuffle, roll, narrow and
/// repeat_interleave: by call_function target and method name.
const std::map<std::string, Rule>& shuffle_rules();
const std::map<std::string, Rule>& shuffle_method_rules();
/// LayerNorm over the last `shape.size()` dims of `x` (weight and bias may be
/// undefined): LayerNormalization from opset 17, else its mean/variance ops.
Value layer_norm(const Context& c, const std::string& x, const std::vector<int64_t>& shape, at::Tensor weight,
                 at::Tensor bias, double eps);
/// InstanceNormalization of `x` ([batch, `channels`, ...]; weight and bias
/// may be undefined: ones and zeros).
Value instance_norm(const Context& c, const std::string& x, int64_t channels, at::Tensor weight, at::Tensor bias,
                    double eps);
/// group_norm of argument 0 into `groups` (weight and bias may be undefined).
Value group_norm(const Context& c, int64_t groups, const at::Tensor& weight, const at::Tensor& bias, double eps);
/// torch.flatten of argument 0 from `start` to `end` (dims of the example
/// run's rank, either may be negative): Flatten for 1..last, else a Reshape
/// that keeps the leading dims (0 = copy) and the trailing ones.
Value flatten(const Context& c, int64_t start, int64_t end);
/// Softmax of argument 0 over `dim`.
Value softmax(const Context& c, int64_t dim);
/// adaptive_avg_poolNd of argument 0: GlobalAveragePool for output size 1,
/// else AveragePool with the kernel the example run's sizes give.
Value adaptive_avg_pool(const Context& c, std::vector<int64_t> output_size);

}  // namespace qfx::io::onnx_export
