#pragma once
// What the CPU offers the SIMD kernels of this directory, checked once per
// process.

namespace qfx::quant::detail {

/// Whether the CPU has AVX2 (always false unless built for x86-64 with GCC
/// or Clang, whose target attributes compile the AVX2 paths).
inline bool cpu_has_avx2() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return has;
#else
  return false;
#endif
}

}  // namespace qfx::quant::detail
