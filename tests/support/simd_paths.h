#pragma once
// Runs a kernel test on both of a kernel file's paths: its AVX2 switch as the
// CPU sets it, then off (the SSE2 / scalar paths).

#include <gtest/gtest.h>

namespace qfx::test {

/// Runs `body` with `avx2_switch` as it is (on where the CPU has AVX2) and
/// then off, each under a trace naming the path; restores the switch.
template <typename Body>
void with_and_without_avx2(bool& avx2_switch, Body body) {
  const bool saved = avx2_switch;
  for (bool avx2 : {saved, false}) {
    SCOPED_TRACE(avx2 ? "AVX2" : "SSE2");
    avx2_switch = avx2;
    body();
  }
  avx2_switch = saved;
}

}  // namespace qfx::test
