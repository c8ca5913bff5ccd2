#include "onnx_rules.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

namespace qfx::io::onnx_export {

const Value& Context::arg(size_t index, const char* keyword) const {
  static const Value kNone;
  if (index < args_.size()) return args_[index];
  if (keyword != nullptr) {
    auto it = kwargs_.find(keyword);
    if (it != kwargs_.end()) return it->second;
  }
  return kNone;
}

void Context::fail(const std::string& what) const {
  TORCH_CHECK(false, "ONNX export: node %", node_.name(), " (", ir::opcode_name(node_.op()), " ", node_.target(),
              "): ", what);
}

std::string Context::constant(const std::string& hint, const at::Tensor& t) const {
  auto key = std::make_tuple(t.data_ptr(), static_cast<int64_t>(t.scalar_type()), t.sizes().vec());
  auto it = state_.constants.find(key);
  if (it != state_.constants.end()) return it->second.first;
  std::string name = state_.graph.initializer(hint, t);
  state_.constants.emplace(key, std::make_pair(name, t));
  return name;
}

std::string Context::tensor(const Value& v) const {
  if (v.kind == Value::Kind::kQuantized && v.name.empty()) {  // a weight quantized in the graph: its integers
    return constant(hint() + "_constant_quantized", v.constant.toTensor().int_repr());
  }
  if (v.kind == Value::Kind::kDequantized && v.name.empty()) {
    return weight_input(*this, v.constant.toTensor(), false, hint() + "_constant");
  }
  switch (v.kind) {
    case Value::Kind::kTensor:
    case Value::Kind::kQuantized: return v.name;
    case Value::Kind::kDequantized: return g().dequantize(v.name, v.qparams, v.name + "_dequantized");
    case Value::Kind::kConstant:
      if (v.constant.isTensor()) return constant(hint() + "_constant", v.constant.toTensor());
      if (v.constant.isDouble() || v.constant.isInt()) {
        return g().initializer(hint() + "_scalar", at::scalar_tensor(v.constant.toScalar(), at::kFloat));
      }
      break;
    default: break;
  }
  fail("an argument is not a tensor");
}

int64_t Context::int_of(const Value& v) const {
  if (v.kind == Value::Kind::kConstant && v.constant.isInt()) return v.constant.toInt();
  if (v.kind == Value::Kind::kConstant && v.constant.isBool()) return v.constant.toBool() ? 1 : 0;
  fail("an argument that must be an integer known at export time is not");
}

std::vector<int64_t> Context::ints_of(const Value& v) const {
  if (v.kind == Value::Kind::kConstant && v.constant.isInt()) return {v.constant.toInt()};
  if (v.kind == Value::Kind::kConstant && v.constant.isIntList()) return v.constant.toIntVector();
  if (v.kind == Value::Kind::kList) {
    std::vector<int64_t> out;
    for (const Value& item : v.items) out.push_back(int_of(item));
    return out;
  }
  fail("an argument that must be a list of integers known at export time is not");
}

double Context::double_of(const Value& v) const {
  if (v.kind == Value::Kind::kConstant && (v.constant.isDouble() || v.constant.isInt())) {
    return v.constant.toScalar().toDouble();
  }
  if (v.kind == Value::Kind::kConstant && v.constant.isTensor() && v.constant.toTensor().numel() == 1) {
    return v.constant.toTensor().item<double>();
  }
  fail("an argument that must be a number known at export time is not");
}

const std::vector<int64_t>& Context::shape_of(const ir::Node* node) const {
  auto it = state_.run.shapes.find(node);
  if (it == state_.run.shapes.end()) fail("the example run gave %" + node->name() + " no tensor value");
  return it->second;
}

c10::ScalarType Context::dtype_of(const ir::Node* node) const {
  auto it = state_.run.dtypes.find(node);
  if (it == state_.run.dtypes.end()) fail("the example run gave %" + node->name() + " no tensor or number");
  return it->second;
}

const ir::Node* Context::arg_node(size_t index) const {
  if (index >= node_.args().size() || !node_.args()[index].is_node())
    fail("argument " + std::to_string(index) + " is not a node");
  return node_.args()[index].to_node();
}

}  // namespace qfx::io::onnx_export
