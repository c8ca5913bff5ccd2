#pragma once
// A node argument of torch.export's schema (a one-key union object:
// {"as_int": 3}, {"as_tensor": {"name": "x"}}, ...) read as a constant or as
// the names of the graph values it refers to. Internal to src/io.

#include <ATen/core/ivalue.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace qfx::io::pt2 {

/// The union's kind: "as_int", "as_tensor", ...; c10::Error for a value that is no union.
std::string argument_kind(const nlohmann::json& argument);

/// The argument as a constant (None, numbers, strings, lists of them, dtype /
/// layout / memory format as ATen's ints, devices); nullopt when it refers to
/// graph values (tensors, symbolic ints).
c10::optional<c10::IValue> constant_of(const nlohmann::json& argument);

/// The graph values the argument refers to, in order (tensors, symbolic ints).
std::vector<std::string> value_names(const nlohmann::json& argument);

}  // namespace qfx::io::pt2
