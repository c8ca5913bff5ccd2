// Python spellings of values. python_float_repr follows CPython's float_repr
// (shortest round-trip digits; exponent form when the decimal exponent is below
// -4 or at least 16); the name tables follow PyTorch's `repr` of dtypes,
// layouts and memory formats.

#include "qfx/ir/python_literals.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace qfx::ir {
namespace {

// The shortest decimal that reads back as `value` (> 0), as Python's repr
// picks it: the significant digits (no dot) and the decimal exponent of the
// first digit.
std::pair<std::string, int> shortest_digits(double value) {
  char buf[40];
  const std::to_chars_result end = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  const std::string_view text(buf, static_cast<size_t>(end.ptr - buf));
  const size_t e = text.find('e');
  std::string digits;
  for (size_t i = 0; i < e; ++i) {
    if (text[i] != '.') digits += text[i];
  }
  return {digits, std::atoi(std::string(text.substr(e + 1)).c_str())};
}

std::string fixed_notation(const std::string& digits, int exponent) {
  if (exponent < 0) return "0." + std::string(-exponent - 1, '0') + digits;
  std::string integral = digits.substr(0, std::min<size_t>(digits.size(), exponent + 1));
  integral += std::string(exponent + 1 - integral.size(), '0');
  std::string fraction = digits.size() > size_t(exponent + 1) ? digits.substr(exponent + 1) : "0";
  return integral + "." + fraction;
}

std::string exponent_notation(const std::string& digits, int exponent) {
  std::string mantissa = digits.substr(0, 1);
  if (digits.size() > 1) mantissa += "." + digits.substr(1);
  char buf[16];
  std::snprintf(buf, sizeof(buf), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return mantissa + buf;
}

template <typename T>
struct NameRow {
  T value;
  const char* name;
};

// PyTorch's names; the first row for a value is the one `repr` prints.
constexpr std::array<NameRow<c10::ScalarType>, 26> kDtypeNames{{
    {c10::ScalarType::Float, "torch.float32"},
    {c10::ScalarType::Float, "torch.float"},
    {c10::ScalarType::Double, "torch.float64"},
    {c10::ScalarType::Double, "torch.double"},
    {c10::ScalarType::Half, "torch.float16"},
    {c10::ScalarType::Half, "torch.half"},
    {c10::ScalarType::BFloat16, "torch.bfloat16"},
    {c10::ScalarType::Long, "torch.int64"},
    {c10::ScalarType::Long, "torch.long"},
    {c10::ScalarType::Int, "torch.int32"},
    {c10::ScalarType::Int, "torch.int"},
    {c10::ScalarType::Short, "torch.int16"},
    {c10::ScalarType::Short, "torch.short"},
    {c10::ScalarType::Char, "torch.int8"},
    {c10::ScalarType::Byte, "torch.uint8"},
    {c10::ScalarType::Bool, "torch.bool"},
    {c10::ScalarType::QUInt8, "torch.quint8"},
    {c10::ScalarType::QInt8, "torch.qint8"},
    {c10::ScalarType::QInt32, "torch.qint32"},
    {c10::ScalarType::QUInt4x2, "torch.quint4x2"},
    {c10::ScalarType::QUInt2x4, "torch.quint2x4"},
    {c10::ScalarType::ComplexHalf, "torch.complex32"},
    {c10::ScalarType::ComplexFloat, "torch.complex64"},
    {c10::ScalarType::ComplexFloat, "torch.cfloat"},
    {c10::ScalarType::ComplexDouble, "torch.complex128"},
    {c10::ScalarType::ComplexDouble, "torch.cdouble"},
}};

constexpr std::array<NameRow<c10::Layout>, 3> kLayoutNames{{
    {c10::Layout::Strided, "torch.strided"},
    {c10::Layout::Sparse, "torch.sparse_coo"},
    {c10::Layout::Mkldnn, "torch._mkldnn"},
}};

constexpr std::array<NameRow<c10::MemoryFormat>, 4> kMemoryFormatNames{{
    {c10::MemoryFormat::Contiguous, "torch.contiguous_format"},
    {c10::MemoryFormat::Preserve, "torch.preserve_format"},
    {c10::MemoryFormat::ChannelsLast, "torch.channels_last"},
    {c10::MemoryFormat::ChannelsLast3d, "torch.channels_last_3d"},
}};

template <typename T, size_t N>
std::string name_of(const std::array<NameRow<T>, N>& table, T value, const char* what) {
  for (const auto& row : table) {
    if (row.value == value) return row.name;
  }
  return std::string("torch.<unknown ") + what + ">";
}

template <typename T, size_t N>
std::optional<T> value_of(const std::array<NameRow<T>, N>& table, std::string_view name) {
  for (const auto& row : table) {
    if (name == row.name) return row.value;
  }
  return std::nullopt;
}

char escape_letter(char c) {
  switch (c) {
    case '\n': return 'n';
    case '\t': return 't';
    case '\r': return 'r';
    default: return 0;
  }
}

}  // namespace

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
  std::string sign = value < 0 ? "-" : "";
  auto [digits, exponent] = shortest_digits(std::fabs(value));
  if (exponent < -4 || exponent >= 16) return sign + exponent_notation(digits, exponent);
  return sign + fixed_notation(digits, exponent);
}

std::string python_str_repr(std::string_view text) {
  bool has_single = text.find('\'') != std::string_view::npos;
  bool has_double = text.find('"') != std::string_view::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char c : text) {
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (char letter = escape_letter(c)) {
      out += '\\';
      out += letter;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + quote;
}

std::optional<std::string> parse_python_str(std::string_view literal) {
  if (literal.size() < 2) return std::nullopt;
  char quote = literal.front();
  if ((quote != '\'' && quote != '"') || literal.back() != quote) return std::nullopt;
  std::string out;
  for (size_t i = 1; i + 1 < literal.size(); ++i) {
    char c = literal[i];
    if (c != '\\') {
      if (c == quote) return std::nullopt;
      out += c;
      continue;
    }
    if (++i + 1 >= literal.size()) return std::nullopt;
    char e = literal[i];
    if (e == 'n')
      out += '\n';
    else if (e == 't')
      out += '\t';
    else if (e == 'r')
      out += '\r';
    else if (e == 'x' && i + 3 < literal.size()) {
      out += static_cast<char>(std::stoi(std::string(literal.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else
      out += e;
  }
  return out;
}

std::string dtype_name(c10::ScalarType dtype) { return name_of(kDtypeNames, dtype, "dtype"); }
std::optional<c10::ScalarType> parse_dtype(std::string_view name) { return value_of(kDtypeNames, name); }
std::string layout_name(c10::Layout layout) { return name_of(kLayoutNames, layout, "layout"); }
std::optional<c10::Layout> parse_layout(std::string_view name) { return value_of(kLayoutNames, name); }
std::string memory_format_name(c10::MemoryFormat format) {
  return name_of(kMemoryFormatNames, format, "memory_format");
}
std::optional<c10::MemoryFormat> parse_memory_format(std::string_view name) {
  return value_of(kMemoryFormatNames, name);
}

}  // namespace qfx::ir
