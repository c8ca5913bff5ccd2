// BlasThreadsCap: OpenBLAS's thread count, found at run time (dlsym), so that
// qfx neither links OpenBLAS nor needs it.

#include "blas_threads.h"

#include <dlfcn.h>

#include <algorithm>
#include <mutex>

namespace qfx::ir::detail {
namespace {

/// OpenBLAS's thread-count functions, or nulls when the process has none.
struct OpenBlas {
  int (*get_num_threads)() = nullptr;
  void (*set_num_threads)(int) = nullptr;

  static const OpenBlas& instance() {
    static const OpenBlas blas = [] {
      OpenBlas b;
      b.get_num_threads = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
      b.set_num_threads = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
      if (b.get_num_threads == nullptr || b.set_num_threads == nullptr) b = OpenBlas();
      return b;
    }();
    return blas;
  }
};

/// The caps alive and the count to restore when the last one goes.
struct Caps {
  std::mutex mutex;
  int alive = 0;
  int restore = 0;
  int lowest = 0;
};

Caps& caps() {
  static Caps c;
  return c;
}

}  // namespace

BlasThreadsCap::BlasThreadsCap(int most) {
  const OpenBlas& blas = OpenBlas::instance();
  if (blas.set_num_threads == nullptr) return;
  Caps& c = caps();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.alive++ == 0) c.lowest = c.restore = blas.get_num_threads();
  most = std::max(most, 1);
  if (most < c.lowest) {
    c.lowest = most;
    blas.set_num_threads(most);
  }
}

BlasThreadsCap::~BlasThreadsCap() {
  const OpenBlas& blas = OpenBlas::instance();
  if (blas.set_num_threads == nullptr) return;
  Caps& c = caps();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (--c.alive == 0 && c.lowest != c.restore) blas.set_num_threads(c.restore);
}

}  // namespace qfx::ir::detail
