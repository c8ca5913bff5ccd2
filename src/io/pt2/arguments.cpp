// Node arguments of torch.export's schema (torch/_export/serde/schema.py:
// Argument, SymIntArgument, TensorArgument, OptionalTensorArgument).

#include "arguments.h"

#include "archive.h"

#include <c10/core/Device.h>
#include <c10/util/Exception.h>

namespace qfx::io::pt2 {
namespace {

using json = nlohmann::json;

c10::MemoryFormat memory_format(int64_t serialized) {
  switch (serialized) {  // schema.py: MemoryFormat
    case 1: return c10::MemoryFormat::Contiguous;
    case 2: return c10::MemoryFormat::ChannelsLast;
    case 3: return c10::MemoryFormat::ChannelsLast3d;
    case 4: return c10::MemoryFormat::Preserve;
  }
  TORCH_CHECK(false, "memory format ", serialized, " of torch.export's schema is not one qfx reads");
}

c10::Layout layout(int64_t serialized) {
  TORCH_CHECK(serialized == 7, "layout ", serialized, " of torch.export's schema is not strided");  // schema.py: Layout
  return c10::Layout::Strided;
}

/// A SymInt / SymFloat / SymBool argument: its constant, or nullopt for a named value.
c10::optional<c10::IValue> symbolic(const json& value) {
  for (const char* kind : {"as_int", "as_float", "as_bool"}) {
    if (value.contains(kind) && !value[kind].is_null()) return constant_of(json{{kind, value[kind]}});
  }
  return c10::nullopt;
}

template <typename T>
c10::IValue list_of(const json& values) {
  c10::List<T> list;
  for (const auto& v : values) list.push_back(v.get<T>());
  return list;
}

}  // namespace

std::string argument_kind(const json& argument) {
  TORCH_CHECK(argument.is_object() && !argument.empty(),
              "an argument that is not a torch.export union: ", argument.dump().substr(0, 80));
  for (const auto& [kind, value] : argument.items()) {
    if (!value.is_null()) return kind;
  }
  return argument.begin().key();
}

c10::optional<c10::IValue> constant_of(const json& argument) {
  std::string kind = argument_kind(argument);
  const json& v = argument.at(kind);
  if (kind == "as_none") return c10::IValue();
  if (kind == "as_int") return c10::IValue(v.get<int64_t>());
  if (kind == "as_float") return c10::IValue(v.get<double>());
  if (kind == "as_bool") return c10::IValue(v.get<bool>());
  if (kind == "as_string") return c10::IValue(v.get<std::string>());
  if (kind == "as_ints") return list_of<int64_t>(v);
  if (kind == "as_floats") return list_of<double>(v);
  if (kind == "as_bools") return list_of<bool>(v);
  if (kind == "as_strings") return list_of<std::string>(v);
  if (kind == "as_scalar_type") return c10::IValue(static_cast<int64_t>(scalar_type(v.get<int64_t>(), "an argument")));
  if (kind == "as_memory_format") return c10::IValue(static_cast<int64_t>(memory_format(v.get<int64_t>())));
  if (kind == "as_layout") return c10::IValue(static_cast<int64_t>(layout(v.get<int64_t>())));
  if (kind == "as_device") {
    c10::Device device(v.at("type").get<std::string>());
    if (v.contains("index") && !v["index"].is_null()) device.set_index(v["index"].get<int8_t>());
    return c10::IValue(device);
  }
  if (kind == "as_sym_int" || kind == "as_sym_float" || kind == "as_sym_bool") return symbolic(v);
  if (kind == "as_sym_ints") {
    c10::List<int64_t> list;
    for (const auto& item : v) {
      auto c = symbolic(item);
      if (!c) return c10::nullopt;
      list.push_back(c->toInt());
    }
    return c10::IValue(list);
  }
  if (kind == "as_tensor" || kind == "as_tensors" || kind == "as_optional_tensors" || kind == "as_optional_tensor") {
    return c10::nullopt;
  }
  TORCH_CHECK(false, "an argument of kind '", kind, "', which qfx does not read");
}

std::vector<std::string> value_names(const json& argument) {
  std::string kind = argument_kind(argument);
  const json& v = argument.at(kind);
  std::vector<std::string> names;
  auto add_symbolic = [&](const json& item) {
    if (item.contains("as_name") && !item["as_name"].is_null()) names.push_back(item["as_name"].get<std::string>());
  };
  if (kind == "as_tensor") names.push_back(v.at("name").get<std::string>());
  if (kind == "as_tensors") {
    for (const auto& t : v) names.push_back(t.at("name").get<std::string>());
  }
  if (kind == "as_optional_tensors") {
    for (const auto& t : v) {
      if (argument_kind(t) == "as_tensor") names.push_back(t.at("as_tensor").at("name").get<std::string>());
    }
  }
  if (kind == "as_optional_tensor" && argument_kind(v) == "as_tensor") {
    names.push_back(v.at("as_tensor").at("name").get<std::string>());
  }
  if (kind == "as_sym_int" || kind == "as_sym_float" || kind == "as_sym_bool") add_symbolic(v);
  if (kind == "as_sym_ints") {
    for (const auto& item : v) add_symbolic(item);
  }
  return names;
}

}  // namespace qfx::io::pt2
