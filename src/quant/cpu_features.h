#pragma once
// What the CPU offers the SIMD kernels of this directory. QFX_AVX2_KERNELS
// is defined where the compiler can build AVX2 functions (x86-64, GCC or
// Clang target attributes); cpu_has_avx2() says, once per process, whether
// this CPU runs them.

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QFX_AVX2_KERNELS 1
#endif

namespace qfx::quant::detail {

/// Whether the CPU has AVX2 (always false without QFX_AVX2_KERNELS).
inline bool cpu_has_avx2() {
#ifdef QFX_AVX2_KERNELS
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
