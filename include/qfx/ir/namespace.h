#pragma once
/// \file
/// Namespace: unique, legal Python identifiers for node names, with torch.fx's
/// rules: illegal characters become `_`, a leading digit gets a `_` prefix,
/// a taken name gets the next free `_N` suffix (`add`, `add_1`, ...), and
/// Python keywords and builtins are never used (`input` becomes `input_1`).

#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace qfx::ir {

/// A set of used names, handing out fresh ones.
///
/// Example:
/// \code
///   Namespace ns;
///   ns.create_name("layer1.0.conv1");  // "layer1_0_conv1"
///   ns.create_name("add");             // "add"
///   ns.create_name("add");             // "add_1"
/// \endcode
class Namespace {
 public:
  /// Returns a fresh legal name derived from `candidate` and marks it used.
  std::string create_name(std::string_view candidate);
  /// Marks `name` used without checking it.
  void reserve(const std::string& name) { used_.insert(name); }
  /// True if `name` was handed out or reserved.
  bool contains(const std::string& name) const { return used_.count(name) > 0; }

 private:
  std::unordered_set<std::string> used_;
  /// Per base name, k such that `base_1` ... `base_k` are all used: a search
  /// for a free suffix starts there, so naming N nodes alike stays linear.
  std::unordered_map<std::string, long long> dense_;
};

/// FX's `_snake_case`: `convBlock` -> `conv_block`, `ALL_CAPS` -> `all_caps`.
std::string snake_case(std::string_view text);

/// True for Python keywords and names of Python builtins.
bool is_python_reserved(const std::string& name);

}  // namespace qfx::ir
