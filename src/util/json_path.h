#pragma once
// Helpers for strict JSON readers whose errors name the JSON path of the bad
// value: `configs[12].dtype_configs[0].input_dtype: unknown dtype "torch.quint9"`.

#include <c10/util/Exception.h>
#include <nlohmann/json.hpp>

#include <initializer_list>
#include <string>

namespace qfx::detail {

/// Raises c10::Error `PATH: WHAT` (`<root>` for the empty path).
[[noreturn]] inline void json_fail(const std::string& path, const std::string& what) {
  TORCH_CHECK(false, (path.empty() ? "<root>" : path), ": ", what);
}

/// Longest value an error message echoes whole.
inline constexpr size_t kMaxEchoed = 80;

/// `"value"` for an error message; a longer value than kMaxEchoed is cut:
/// `"abc..." (50000000 characters)`.
inline std::string echoed(const std::string& value) {
  if (value.size() <= kMaxEchoed) return "\"" + value + "\"";
  return "\"" + value.substr(0, kMaxEchoed) + "...\" (" + std::to_string(value.size()) + " characters)";
}

/// `path.key`, or `key` at the root.
inline std::string join_path(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

/// `path[i]`.
inline std::string index_path(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

/// Raises for a key of object `j` that is not in `allowed`.
inline void check_keys(const nlohmann::json& j, std::initializer_list<const char*> allowed, const std::string& path) {
  for (const auto& item : j.items()) {
    bool known = false;
    for (const char* key : allowed) known = known || item.key() == key;
    if (!known) json_fail(path, "unknown key " + echoed(item.key()));
  }
}

/// Runs `fn`, re-raising its c10::Error as an error at `path`.
template <typename Fn>
auto at_path(const std::string& path, Fn fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const c10::Error& e) {
    json_fail(path, e.what_without_backtrace());
  }
}

}  // namespace qfx::detail
