#include "onnx_graph.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>

namespace qfx::io::onnx_export {

int32_t onnx_type(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kFloat: return onnx::TensorProto::FLOAT;
    case c10::kHalf: return onnx::TensorProto::FLOAT16;
    case c10::kDouble: return onnx::TensorProto::DOUBLE;
    case c10::kChar:
    case c10::kQInt8: return onnx::TensorProto::INT8;
    case c10::kByte:
    case c10::kQUInt8: return onnx::TensorProto::UINT8;
    case c10::kInt:
    case c10::kQInt32: return onnx::TensorProto::INT32;
    case c10::kLong: return onnx::TensorProto::INT64;
    case c10::kBool: return onnx::TensorProto::BOOL;
    default: TORCH_CHECK(false, "ONNX export: tensors of dtype ", dtype, " have no ONNX form");
  }
}

std::string OnnxGraph::fresh(const std::string& hint) {
  std::string base = hint.empty() ? "v" : hint;
  std::replace(base.begin(), base.end(), '.', '_');
  std::string name = base;
  for (int i = 1; taken_->count(name) != 0; ++i) name = base + "_" + std::to_string(i);
  taken_->insert(name);
  return name;
}

OnnxGraph OnnxGraph::subgraph(onnx::GraphProto& graph) const {
  OnnxGraph body(graph, opset_);
  body.taken_ = taken_;
  return body;
}

std::string OnnxGraph::initializer(const std::string& hint, const at::Tensor& tensor) {
  at::Tensor t = tensor.is_quantized() ? tensor.int_repr() : tensor;
  t = t.detach().contiguous().cpu();
  onnx::TensorProto* proto = graph_.add_initializer();
  std::string name = fresh(hint);
  proto->set_name(name);
  proto->set_data_type(onnx_type(tensor.scalar_type()));
  for (int64_t d : t.sizes()) proto->add_dims(d);
  proto->set_raw_data(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size());
  return name;
}

std::string OnnxGraph::ints(const std::string& hint, const std::vector<int64_t>& values) {
  return initializer(hint, at::tensor(values, at::kLong));
}

std::vector<std::string> OnnxGraph::node(const std::string& op_type, const std::vector<std::string>& inputs,
                                         const std::string& hint, size_t num_outputs, const std::vector<Attr>& attrs) {
  onnx::NodeProto* node = graph_.add_node();
  node->set_op_type(op_type);
  std::string base = hint.empty() ? op_type : hint;
  node->set_name(fresh(base + "_" + op_type));
  for (const std::string& input : inputs) node->add_input(input);
  std::vector<std::string> outputs;
  for (size_t i = 0; i < num_outputs; ++i) {
    outputs.push_back(fresh(i == 0 ? base : base + "_" + std::to_string(i)));
    node->add_output(outputs.back());
  }
  for (const Attr& a : attrs) {
    onnx::AttributeProto* attr = node->add_attribute();
    attr->set_name(a.name);
    if (auto* i = std::get_if<int64_t>(&a.value)) {
      attr->set_type(onnx::AttributeProto::INT);
      attr->set_i(*i);
    } else if (auto* f = std::get_if<float>(&a.value)) {
      attr->set_type(onnx::AttributeProto::FLOAT);
      attr->set_f(*f);
    } else if (auto* v = std::get_if<std::vector<int64_t>>(&a.value)) {
      attr->set_type(onnx::AttributeProto::INTS);
      for (int64_t x : *v) attr->add_ints(x);
    } else if (auto* graph = std::get_if<onnx::GraphProto>(&a.value)) {
      attr->set_type(onnx::AttributeProto::GRAPH);
      *attr->mutable_g() = *graph;
    } else if (auto* strings = std::get_if<std::vector<std::string>>(&a.value)) {
      attr->set_type(onnx::AttributeProto::STRINGS);
      for (const std::string& x : *strings) attr->add_strings(x);
    } else {
      attr->set_type(onnx::AttributeProto::STRING);
      attr->set_s(std::get<std::string>(a.value));
    }
  }
  return outputs;
}

std::string OnnxGraph::op(const std::string& op_type, const std::vector<std::string>& inputs, const std::string& hint,
                          const std::vector<Attr>& attrs) {
  return node(op_type, inputs, hint, 1, attrs).front();
}

namespace {
std::vector<Attr> axis_attr(const QParams& q) {
  if (q.axis < 0) return {};
  return {{"axis", q.axis}};
}
}  // namespace

std::string OnnxGraph::dequantize(const std::string& value, const QParams& q, const std::string& hint) {
  return op("DequantizeLinear", {value, q.scale, q.zero_point}, hint, axis_attr(q));
}

std::string OnnxGraph::quantize(const std::string& value, const QParams& q, const std::string& hint) {
  return op("QuantizeLinear", {value, q.scale, q.zero_point}, hint, axis_attr(q));
}

QParams OnnxGraph::qparams(const std::string& hint, const at::Tensor& scale, const at::Tensor& zero_point,
                           c10::ScalarType dtype, int64_t axis) {
  bool per_channel = scale.dim() == 1 && axis >= 0;
  at::Tensor s = scale.to(at::kFloat);
  at::Tensor z = zero_point.to(dtype == c10::kQUInt8   ? at::kByte
                               : dtype == c10::kQInt8  ? at::kChar
                               : dtype == c10::kQInt32 ? at::kInt
                                                       : dtype);
  if (!per_channel) {
    s = s.reshape({});
    z = z.reshape({});
  }
  QParams q;
  q.scale_value = s;
  q.zero_point_value = z;
  q.scale = initializer(hint + "_scale", s);
  q.zero_point = initializer(hint + "_zero_point", z);
  q.axis = per_channel ? axis : -1;
  return q;
}

}  // namespace qfx::io::onnx_export
