// GraphBuilder: nodes in scopes, attributes once per path, constants as FX
// records them, leaves added once per path.

#include "qfx/io/graph_builder.h"

#include "qfx/ir/graph.h"
#include "qfx/ir/op_names.h"
#include "qfx/nn/opaque_modules.h"

namespace qfx::io {
namespace {

bool is_enum_type(const c10::TypePtr& type, c10::TypeKind kind) {
  if (type == nullptr) return false;
  if (auto optional = type->cast<c10::OptionalType>()) return is_enum_type(optional->getElementType(), kind);
  return type->kind() == kind;
}

}  // namespace

void GraphBuilder::fail(const std::string& what) const {
  fail_(what);
  TORCH_CHECK(false, "import: ", what);  // a Fail that returned
}

ir::Node* GraphBuilder::scoped(ir::Node* node) {
  node->meta()[ir::kScopeMeta] = scopes_.back();
  return node;
}

ir::Node* GraphBuilder::placeholder(const std::string& name, const std::string& type_annotation) {
  ir::Node* node = scoped(gm_.graph().placeholder(name));
  node->meta()[ir::kInputTypeMeta] = type_annotation;
  return node;
}

ir::Node* GraphBuilder::output(const ir::Argument& value) { return scoped(gm_.graph().output(value)); }

ir::Node* GraphBuilder::call(ir::Opcode op, const std::string& target, std::vector<ir::Argument> args,
                             ir::Kwargs kwargs) {
  return scoped(gm_.graph().create_node(op, target, std::move(args), std::move(kwargs)));
}

ir::Node* GraphBuilder::getitem(const ir::Argument& of, const ir::Argument& index) {
  return call(ir::Opcode::kCallFunction, ir::op::kGetitem, {of, index});
}

ir::Node* GraphBuilder::get_attr(const std::string& path, const at::Tensor& value) {
  auto it = attribute_nodes_.find(path);
  if (it != attribute_nodes_.end()) return it->second;
  if (!gm_.has_attr(path)) gm_.set_attr(path, value);
  ir::Node* node = scoped(gm_.graph().get_attr(path));
  attribute_nodes_.emplace(path, node);
  return node;
}

ir::Argument GraphBuilder::constant(const c10::IValue& v, const c10::TypePtr& type) {
  if (v.isNone()) return {};
  if (v.isBool()) return v.toBool();
  if (v.isInt()) {
    if (is_enum_type(type, c10::TypeKind::ScalarTypeType)) return static_cast<c10::ScalarType>(v.toInt());
    if (is_enum_type(type, c10::TypeKind::LayoutType)) return static_cast<c10::Layout>(v.toInt());
    if (is_enum_type(type, c10::TypeKind::MemoryFormatType)) return static_cast<c10::MemoryFormat>(v.toInt());
    return v.toInt();
  }
  if (v.isDouble()) return v.toDouble();
  if (v.isString()) return v.toStringRef();
  if (v.isDevice()) return v.toDevice().str();
  if (v.isList() || v.isTuple()) {
    ir::Argument::Items items;
    auto elements = v.isList() ? v.toListRef().vec() : v.toTupleRef().elements().vec();
    for (const c10::IValue& e : elements) items.push_back(constant(e, nullptr));
    return v.isList() ? ir::Argument::list(std::move(items)) : ir::Argument::tuple(std::move(items));
  }
  if (v.isTensor()) return get_attr("_tensor_constant" + std::to_string(tensor_constants_++), v.toTensor());
  fail(std::string("a constant of unsupported type ") + v.tagKind());
}

void GraphBuilder::add_module(const std::string& path, std::shared_ptr<torch::nn::Module> module) {
  if (modules_.insert(path).second) gm_.add_submodule(path, std::move(module));
}

ir::Node* GraphBuilder::call_module(const std::string& path,
                                    const std::function<std::shared_ptr<torch::nn::Module>()>& make,
                                    std::vector<ir::Argument> args) {
  if (!has_module(path)) add_module(path, make());
  return call_module(path, std::move(args));
}

ir::Node* GraphBuilder::call_module(const std::string& path, std::vector<ir::Argument> args) {
  TORCH_CHECK(has_module(path), "internal: call of module '", path, "' before it was added");
  ir::Node* node = gm_.graph().call_module(path, std::move(args));
  // QuantizationTracer records a leaf's own call under the leaf's scope.
  node->meta()[ir::kScopeMeta] = ir::NodeScope{path, nn::python_class_of(*gm_.get_submodule(path))};
  return node;
}

}  // namespace qfx::io
