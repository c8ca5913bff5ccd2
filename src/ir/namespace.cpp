// FX's _Namespace.create_name, with the keyword and builtin lists of the
// Python 3.11 that runs the oracle (Python's `keyword.kwlist` and
// `builtins.__dict__`).

#include "qfx/ir/namespace.h"

#include <algorithm>
#include <cctype>

namespace qfx::ir {
namespace {

const std::unordered_set<std::string>& reserved_names() {
  static const std::unordered_set<std::string> kNames = {
      // keyword.kwlist
      "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
      "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
      "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
      // builtins.__dict__ (exception classes are CamelCase, never generated)
      "Ellipsis", "NotImplemented", "__build_class__", "__debug__", "__doc__", "__import__", "__loader__", "__name__",
      "__package__", "__spec__", "abs", "aiter", "all", "anext", "any", "ascii", "bin", "bool", "breakpoint",
      "bytearray", "bytes", "callable", "chr", "classmethod", "compile", "complex", "copyright", "credits", "delattr",
      "dict", "dir", "divmod", "enumerate", "eval", "exec", "exit", "filter", "float", "format", "frozenset", "getattr",
      "globals", "hasattr", "hash", "help", "hex", "id", "input", "int", "isinstance", "issubclass", "iter", "len",
      "license", "list", "locals", "map", "max", "memoryview", "min", "next", "object", "oct", "open", "ord", "pow",
      "print", "property", "quit", "range", "repr", "reversed", "round", "set", "setattr", "slice", "sorted",
      "staticmethod", "str", "sum", "super", "tuple", "type", "vars", "zip",
      // FX's custom builtins, present in every generated forward()
      "inf", "nan", "NoneType", "torch", "device", "fx_pytree", "pytree"};
  return kNames;
}

bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Splits "base_12" into ("base", 12); a name without a numeric suffix gives -1.
std::pair<std::string, long long> split_suffix(const std::string& name) {
  size_t underscore = name.rfind('_');
  if (underscore == std::string::npos || underscore + 1 == name.size()) return {name, -1};
  for (size_t i = underscore + 1; i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return {name, -1};
  }
  std::string digits = name.substr(underscore + 1);
  if (digits.size() > 18) return {name, -1};
  return {name.substr(0, underscore), std::stoll(digits)};
}

}  // namespace

bool is_python_reserved(const std::string& name) { return reserved_names().count(name) > 0; }

std::string snake_case(std::string_view text) {
  std::string out;
  bool prev_lower = false;
  for (char c : text) {
    bool upper = std::isupper(static_cast<unsigned char>(c));
    if (prev_lower && upper) out += '_';
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    prev_lower = std::islower(static_cast<unsigned char>(c));
  }
  return out;
}

std::string Namespace::create_name(std::string_view candidate) {
  // Runs of illegal characters become one '_', as FX's regex [^0-9a-zA-Z_]+.
  std::string name;
  for (size_t i = 0; i < candidate.size(); ++i) {
    if (is_identifier_char(candidate[i])) {
      name += candidate[i];
    } else if (i == 0 || is_identifier_char(candidate[i - 1])) {
      name += '_';
    }
  }
  if (name.empty()) name = "_";
  if (std::isdigit(static_cast<unsigned char>(name[0]))) name = "_" + name;
  auto [base, num] = split_suffix(name);
  std::string fresh = num < 0 ? base : base + "_" + std::to_string(num);
  long long counter = num < 0 ? 0 : num;
  if (contains(fresh) || is_python_reserved(fresh)) {
    long long& dense = dense_[base];
    counter = std::max(counter, dense);  // base_1 .. base_dense are taken
    do {
      fresh = base + "_" + std::to_string(++counter);
    } while (contains(fresh) || is_python_reserved(fresh));
  }
  used_.insert(fresh);
  auto it = dense_.find(base);
  if (it != dense_.end()) {
    while (contains(base + "_" + std::to_string(it->second + 1))) ++it->second;
  }
  return fresh;
}

}  // namespace qfx::ir
