// reuse_freed_memory: glibc's mallopt thresholds.

#include "qfx/runtime.h"

#include <c10/util/Exception.h>

#include <climits>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace qfx {

bool reuse_freed_memory(size_t max_block, size_t keep) {
#ifdef __GLIBC__
  TORCH_CHECK(max_block <= static_cast<size_t>(INT_MAX) && keep <= static_cast<size_t>(INT_MAX),
              "reuse_freed_memory: thresholds must fit in an int (glibc's mallopt), got ", max_block, " and ",
              keep);
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
