#pragma once
/// \file
/// How Python and PyTorch spell values: `repr()` of floats and strings, and the
/// names of dtypes, layouts and memory formats (`torch.quint8`,
/// `torch.channels_last`). Printing and parsing both go through here, so
/// printed IR reads back.

#include <c10/core/Layout.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>

#include <optional>
#include <string>
#include <string_view>

namespace qfx::ir {

/// Python's `repr(float)`: the shortest string that reads back to the same
/// double, e.g. `1.0`, `0.0001`, `1e-05`, `inf`, `nan`.
std::string python_float_repr(double value);

/// Python's `repr(str)`: single quotes unless the text holds a single quote
/// and no double quote; backslash escapes for quotes, `\\`, `\n`, `\t`, ...
std::string python_str_repr(std::string_view text);

/// Reads a Python string literal (single or double quoted, with the escapes
/// python_str_repr writes). Returns nullopt when `literal` is not one.
std::optional<std::string> parse_python_str(std::string_view literal);

/// `torch.float32`, `torch.quint8`, ... (PyTorch's `repr(dtype)`).
std::string dtype_name(c10::ScalarType dtype);
/// Reads `torch.float32` and its aliases (`torch.float`, `torch.long`, ...).
std::optional<c10::ScalarType> parse_dtype(std::string_view name);

/// `torch.strided`, `torch.sparse_coo`, ...
std::string layout_name(c10::Layout layout);
std::optional<c10::Layout> parse_layout(std::string_view name);

/// `torch.contiguous_format`, `torch.channels_last`, ...
std::string memory_format_name(c10::MemoryFormat format);
std::optional<c10::MemoryFormat> parse_memory_format(std::string_view name);

}  // namespace qfx::ir
