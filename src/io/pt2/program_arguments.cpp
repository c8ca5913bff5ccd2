// ProgramReader's arguments: a node's inputs in schema order, by name, as
// graph arguments and constants.

#include "arguments.h"
#include "reader.h"

#include <ATen/core/dispatch/Dispatcher.h>

namespace qfx::io::pt2 {

using json = nlohmann::json;

/// The schema of `node`'s ATen op, found in LibTorch's registry.
const c10::FunctionSchema& ProgramReader::schema_of(const json& node, const c10::OperatorName& op) {
  auto handle = c10::Dispatcher::singleton().findSchema(op);
  if (!handle) {
    fail("op " + node.at("target").get<std::string>() +
         (op.name.empty() ? " is not an ATen op" : " has no schema in LibTorch 1.13's ATen"));
  }
  return handle->schema();
}

/// The node's arguments in schema order; absent ones at their default.
std::vector<OpInput> ProgramReader::op_inputs(const json& node, const c10::FunctionSchema& schema) {
  std::vector<OpInput> inputs;
  for (const c10::Argument& a : schema.arguments()) {
    if (const json* v = given(node, a.name())) {
      inputs.push_back({constant_of(*v), [this, v](const c10::TypePtr& type) { return graph_argument(*v, type); }});
    } else if (a.default_value()) {
      inputs.push_back(OpInput::of_constant(*a.default_value()));
    } else {
      fail("argument '" + a.name() + "' of " + schema.name() + " is missing");
    }
  }
  return inputs;
}

ir::Argument ProgramReader::graph_argument(const json& argument, const c10::TypePtr& type) {
  if (auto c = constant_of(argument)) return b_.constant(*c, type);
  std::string kind = argument_kind(argument);
  const json& v = argument.at(kind);
  if (kind == "as_tensor") return value(v.at("name").get<std::string>());
  if (kind == "as_sym_int" || kind == "as_sym_float" || kind == "as_sym_bool") return symbolic_item(v);
  ir::Argument::Items items;
  for (const json& item : v) {
    if (kind == "as_tensors") items.push_back(value(item.at("name").get<std::string>()));
    if (kind == "as_optional_tensors") items.push_back(graph_argument(item, nullptr));
    if (kind == "as_sym_ints") items.push_back(symbolic_item(item));
  }
  if (kind == "as_optional_tensor") return graph_argument(v, nullptr);
  return ir::Argument::list(std::move(items));
}

ir::Argument ProgramReader::symbolic_item(const json& item) {
  if (item.contains("as_name") && !item["as_name"].is_null()) return value(item["as_name"].get<std::string>());
  return b_.constant(*constant_of(item), nullptr);
}

/// What the program records of tensor `name` (dtype, sizes, ...), or nullptr.
const json* ProgramReader::tensor_value(const std::string& name) const {
  auto values = graph_.find("tensor_values");
  return values == graph_.end() || !values->contains(name) ? nullptr : &values->at(name);
}

/// The last size of tensor `name` when the program records it as a number.
c10::optional<int64_t> ProgramReader::last_size(const std::string& name) const {
  const json* meta = tensor_value(name);
  if (meta == nullptr) return c10::nullopt;
  const json& sizes = meta->at("sizes");
  if (sizes.empty() || !sizes.back().contains("as_int")) return c10::nullopt;
  return sizes.back().at("as_int").get<int64_t>();
}

/// The node's input `name` as the program gives it, or nullptr.
const json* ProgramReader::given(const json& node, const std::string& name) {
  for (const json& input : node.at("inputs")) {
    if (input.at("name").get<std::string>() == name) return &input.at("arg");
  }
  return nullptr;
}

/// Arguments of an op LibTorch 1.13 has no schema of, by the program's names (absent: None).
NamedArgs ProgramReader::program_args(const json& node) {
  NamedArgs a;
  a.arg = [this, &node](const std::string& name) {
    const json* v = given(node, name);
    return v == nullptr ? ir::Argument() : graph_argument(*v, nullptr);
  };
  a.constant = [&node](const std::string& name) {
    const json* v = given(node, name);
    return v == nullptr ? c10::make_optional(c10::IValue()) : constant_of(*v);
  };
  a.last_size = [this, &node](const std::string& name) -> c10::optional<int64_t> {
    const json* v = given(node, name);
    if (v == nullptr || argument_kind(*v) != "as_tensor") return c10::nullopt;
    return last_size(v->at("as_tensor").at("name").get<std::string>());
  };
  a.has = [&node](const std::string& name) { return given(node, name) != nullptr; };
  a.is_bool = [this, &node](const std::string& name) {
    const json* v = given(node, name);
    if (v == nullptr || argument_kind(*v) != "as_tensor") return false;
    const json* meta = tensor_value(v->at("as_tensor").at("name").get<std::string>());
    return meta != nullptr && meta->value("dtype", 0) == 12;  // schema.py: ScalarType.BOOL
  };
  return a;
}

/// Arguments by schema name, read from the normalized `inputs`.
NamedArgs ProgramReader::schema_args(const json& node, const c10::FunctionSchema& schema,
                                     const std::vector<OpInput>& inputs) {
  NamedArgs a = program_args(node);
  auto index = [&schema, this](const std::string& name) {
    auto i = schema.argumentIndexWithName(name);
    if (!i) fail("internal: " + schema.name() + " has no argument '" + name + "'");
    return *i;
  };
  a.arg = [this, &schema, &inputs, index](const std::string& name) {
    size_t i = index(name);
    return b_.argument(inputs[i], schema.arguments()[i].real_type());
  };
  a.constant = [&inputs, index](const std::string& name) { return inputs[index(name)].constant; };
  a.has = [&schema](const std::string& name) { return schema.argumentIndexWithName(name).has_value(); };
  return a;
}

}  // namespace qfx::io::pt2
