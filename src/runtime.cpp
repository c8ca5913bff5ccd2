// reuse_freed_memory: glibc's mallopt thresholds, where glibc's malloc is the
// process's allocator.

#include "qfx/runtime.h"

#include <c10/util/Exception.h>

#include <climits>

#include <dlfcn.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace qfx {

std::string allocator_name() {
  // tcmalloc (the qfx programs link it) replaces malloc and accepts mallopt
  // without acting on it
  if (dlsym(RTLD_DEFAULT, "tc_malloc") != nullptr) return "tcmalloc";
#ifdef __GLIBC__
  return "glibc";
#else
  return "other";
#endif
}

bool reuse_freed_memory(size_t max_block, size_t keep) {
#ifdef __GLIBC__
  TORCH_CHECK(max_block <= static_cast<size_t>(INT_MAX) && keep <= static_cast<size_t>(INT_MAX),
              "reuse_freed_memory: thresholds must fit in an int (glibc's mallopt), got ", max_block, " and ",
              keep);
  if (allocator_name() != "glibc") return false;
  // setting either threshold turns glibc's adaptive thresholds off, so both are set
  return mallopt(M_MMAP_THRESHOLD, static_cast<int>(max_block)) == 1 &&
         mallopt(M_TRIM_THRESHOLD, static_cast<int>(keep)) == 1;
#else
  (void)max_block;
  (void)keep;
  return false;
#endif
}

}  // namespace qfx
