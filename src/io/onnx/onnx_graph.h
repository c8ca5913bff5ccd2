#pragma once
// The ONNX side of the export: the values of the IR graph as the export
// sees them (a float tensor, a quantized tensor with its qparams, a constant,
// a list) and a small builder over ONNX's GraphProto that names every tensor
// once and turns LibTorch tensors into initializers.

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <onnx/onnx_pb.h>

#include <memory>
#include <set>
#include <string>
#include <variant>
#include <vector>

namespace qfx::io::onnx_export {

/// The qparams of a quantized ONNX value: initializer names and values.
struct QParams {
  std::string scale, zero_point;  ///< ONNX names (0-d per tensor, 1-d per channel)
  at::Tensor scale_value;         ///< float; 0-d or 1-d
  at::Tensor zero_point_value;    ///< as stored (uint8, int8 or int32)
  int64_t axis = -1;              ///< per-channel axis; -1 per tensor
};

/// An IR value as the export holds it.
struct Value {
  enum class Kind {
    kNone,         ///< Python None (an absent optional argument)
    kTensor,       ///< an ONNX tensor (float, or int64 for sizes and indices)
    kQuantized,    ///< an ONNX uint8/int8 tensor with qparams (QuantizeLinear's output)
    kDequantized,  ///< `dequantize` of a kQuantized value: a DequantizeLinear per use
    kConstant,     ///< a value known at export time (get_attr tensors, literals)
    kList,         ///< a list or tuple of values
    kSlice,        ///< a Python slice: items start, stop, step (each may be kNone)
    kEllipsis,     ///< Python `...` in an index
  };
  Kind kind = Kind::kNone;
  std::string name;  ///< kTensor, kQuantized, kDequantized: the ONNX tensor
  QParams qparams;   ///< kQuantized, kDequantized
  c10::IValue constant;
  std::vector<Value> items;

  static Value tensor(std::string name) { return {Kind::kTensor, std::move(name), {}, {}, {}}; }
  static Value quantized(std::string name, QParams q) {
    return {Kind::kQuantized, std::move(name), std::move(q), {}, {}};
  }
  static Value of_constant(c10::IValue v) { return {Kind::kConstant, "", {}, std::move(v), {}}; }
  static Value list(std::vector<Value> items) { return {Kind::kList, "", {}, {}, std::move(items)}; }
  static Value slice(std::vector<Value> items) { return {Kind::kSlice, "", {}, {}, std::move(items)}; }
  static Value ellipsis() { return {Kind::kEllipsis, "", {}, {}, {}}; }
};

/// An attribute of an ONNX node (a graph: a Loop's body).
struct Attr {
  std::string name;
  std::variant<int64_t, float, std::vector<int64_t>, std::string, std::vector<std::string>, onnx::GraphProto> value;
};

/// Builds one ONNX graph: nodes, initializers, unique names.
class OnnxGraph {
 public:
  OnnxGraph(onnx::GraphProto& graph, int64_t opset) : graph_(graph), opset_(opset) {}
  int64_t opset() const { return opset_; }
  /// A builder over `graph`, a subgraph of this one (a Loop's body, which
  /// sees this graph's values by name): names stay unique across both.
  OnnxGraph subgraph(onnx::GraphProto& graph) const;

  /// A name not used yet, made from `hint` (an IR node name or module path).
  std::string fresh(const std::string& hint);
  /// An initializer holding `tensor` (float, half, int8, uint8, int32, int64
  /// or bool; quantized tensors as their integers); returns its name.
  std::string initializer(const std::string& hint, const at::Tensor& tensor);
  /// An int64 1-d initializer.
  std::string ints(const std::string& hint, const std::vector<int64_t>& values);
  /// A node `op_type(inputs) -> outputs` with `attrs`; outputs named from `hint`.
  std::vector<std::string> node(const std::string& op_type, const std::vector<std::string>& inputs,
                                const std::string& hint, size_t num_outputs = 1, const std::vector<Attr>& attrs = {});
  /// The single-output form of node().
  std::string op(const std::string& op_type, const std::vector<std::string>& inputs, const std::string& hint,
                 const std::vector<Attr>& attrs = {});
  /// DequantizeLinear of `value` (a quantized ONNX tensor with `q`).
  std::string dequantize(const std::string& value, const QParams& q, const std::string& hint);
  /// QuantizeLinear of float tensor `value` with `q`.
  std::string quantize(const std::string& value, const QParams& q, const std::string& hint);
  /// The qparams `scale` (float) and `zero_point` (of `dtype`: uint8, int8 or
  /// int32) as initializers; per channel along `axis` when 1-d.
  QParams qparams(const std::string& hint, const at::Tensor& scale, const at::Tensor& zero_point, c10::ScalarType dtype,
                  int64_t axis);

 private:
  onnx::GraphProto& graph_;
  int64_t opset_;
  std::shared_ptr<std::set<std::string>> taken_ = std::make_shared<std::set<std::string>>();
};

/// ONNX's element type for a LibTorch dtype; c10::Error for others.
int32_t onnx_type(c10::ScalarType dtype);

}  // namespace qfx::io::onnx_export
