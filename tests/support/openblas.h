#pragma once
// The tests' view of OpenBLAS's thread count, found at run time as qfx finds
// it (LibTorch's float path calls OpenBLAS; the project installs it).

#include <dlfcn.h>
#include <gtest/gtest.h>

namespace qfx::test {

/// openblas_get_num_threads(), or -1 when the process has no OpenBLAS.
inline int openblas_threads() {
  auto get = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return get != nullptr ? get() : -1;
}

/// openblas_set_num_threads(n); fails the test when the process has no OpenBLAS.
inline void set_openblas_threads(int n) {
  auto set = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  ASSERT_NE(set, nullptr) << "no OpenBLAS in the process (LibTorch's float path should call it)";
  set(n);
}

/// Sets OpenBLAS's thread count for a scope, then puts back what it was.
class OpenBlasThreadsGuard {
 public:
  explicit OpenBlasThreadsGuard(int n) : before_(openblas_threads()) { set_openblas_threads(n); }
  ~OpenBlasThreadsGuard() {
    if (before_ > 0) set_openblas_threads(before_);
  }
  OpenBlasThreadsGuard(const OpenBlasThreadsGuard&) = delete;
  OpenBlasThreadsGuard& operator=(const OpenBlasThreadsGuard&) = delete;

 private:
  int before_;
};

}  // namespace qfx::test
