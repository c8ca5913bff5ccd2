// reuse_freed_memory: glibc's mallopt thresholds, where glibc's malloc is the
// process's allocator.

#include "qfx/runtime.h"

#include <c10/util/Exception.h>

#include <climits>
#include <string>

#include <dlfcn.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace qfx {

namespace {

/// The allocators told apart, by a part of the file name of the shared
/// object that provides `malloc`.
struct KnownAllocator {
  const char* file_part;
  const char* name;
};
constexpr KnownAllocator kKnownAllocators[] = {
    {"tcmalloc", "tcmalloc"}, {"jemalloc", "jemalloc"}, {"mimalloc", "mimalloc"}, {"/libc.so", "glibc"}};

}  // namespace

std::string allocator_name() {
  // the malloc this process calls, and the file it comes from (a preloaded
  // or linked allocator comes before the C library in the lookup order)
  Dl_info info{};
  void* malloc_address = dlsym(RTLD_DEFAULT, "malloc");
  if (malloc_address == nullptr || dladdr(malloc_address, &info) == 0 || info.dli_fname == nullptr) return "other";
  const std::string file = info.dli_fname;
  for (const KnownAllocator& known : kKnownAllocators) {
    if (file.find(known.file_part) != std::string::npos) return known.name;
  }
  return "other";
}

bool reuse_freed_memory(size_t max_block, size_t keep) {
#ifdef __GLIBC__
  TORCH_CHECK(max_block <= static_cast<size_t>(INT_MAX) && keep <= static_cast<size_t>(INT_MAX),
              "reuse_freed_memory: thresholds must fit in an int (glibc's mallopt), got ", max_block, " and ", keep);
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
