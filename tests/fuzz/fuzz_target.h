#pragma once
/// \file
/// qfx's fuzz targets. Each file in tests/fuzz/targets/ states one with
///
/// \code
///   QFX_FUZZ_TARGET(ir_text) { ... reads data[0, size); returns whether it was accepted ... }
/// \endcode
///
/// In a fuzz build (`make fuzz`, QFX_FUZZ_MAIN defined) the body is
/// libFuzzer's entry point; in qfx_tests it registers with the replay test,
/// which runs every committed input (tests/fuzz/corpus/, tests/fuzz/regressions/).
///
/// A reader meets bad input with c10::Error (the CLI prints it as one line);
/// a target catches c10::Error and nothing else, so any other exception, a
/// crash or a sanitizer report is a finding.

#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

namespace qfx::fuzz {

/// A target's body: true when the code under test accepted the input (read
/// it without error), false when it refused it with a c10::Error.
using TargetFn = bool (*)(const uint8_t* data, size_t size);

/// The targets linked into this program, by name.
std::map<std::string, TargetFn>& targets();

/// Adds a target to targets() (static initialization).
struct Registration {
  Registration(const char* name, TargetFn fn) { targets()[name] = fn; }
};

/// Writes `bytes` to `name` in this process's scratch directory (made once,
/// under /dev/shm when there is one) and returns the file's path. `name` may
/// hold sub-folders, which are made.
std::string scratch_file(const std::string& name, std::string_view bytes);

/// Removes everything in the scratch directory (a target that writes a
/// folder tree starts from an empty one).
void clear_scratch();

/// The zip archive (LibTorch's writer, valid CRCs) of `records`: each
/// `#qfx-record NAME\n` then its bytes up to the next `\n#qfx-record `; a
/// `version` record sets the archive's version. Empty when the writer
/// refuses them (a name twice, a bad version).
std::string zip_records(std::string_view records);

/// A property of the code under test that does not hold: an exception
/// that is not c10::Error, so it escapes the target.
struct Finding : std::logic_error {
  using std::logic_error::logic_error;
};

/// Raises Finding(what) unless `holds`.
inline void require(bool holds, const std::string& what) {
  if (!holds) throw Finding(what);
}

/// Input bytes as a string_view.
inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace qfx::fuzz

#ifdef QFX_FUZZ_MAIN
#define QFX_FUZZ_TARGET(name)                                               \
  static bool qfx_fuzz_##name(const uint8_t* data, size_t size);            \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { \
    qfx_fuzz_##name(data, size);                                            \
    return 0;                                                               \
  }                                                                         \
  static bool qfx_fuzz_##name(const uint8_t* data, size_t size)
#else
#define QFX_FUZZ_TARGET(name)                                                                  \
  static bool qfx_fuzz_##name(const uint8_t* data, size_t size);                               \
  static const ::qfx::fuzz::Registration qfx_fuzz_registration_##name{#name, qfx_fuzz_##name}; \
  static bool qfx_fuzz_##name(const uint8_t* data, size_t size)
#endif
