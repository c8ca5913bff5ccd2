// reuse_freed_memory: large blocks come from the heap and stay there after
// they are freed.

#include "qfx/runtime.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace qfx {
namespace {

/// The allocator this run of the tests expects: glibc's malloc (qfx_tests
/// does not link tcmalloc), or QFX_EXPECTED_ALLOCATOR where the test runs
/// with another one preloaded (tests/CMakeLists.txt: runtime_tcmalloc).
std::string expected_allocator() {
  const char* name = std::getenv("QFX_EXPECTED_ALLOCATOR");
  return name != nullptr ? name : "glibc";
}

#ifdef __SANITIZE_ADDRESS__
/// AddressSanitizer's allocator stands behind malloc (make test-sanitize).
constexpr bool kSanitizedMalloc = true;
#else
constexpr bool kSanitizedMalloc = false;
#endif

TEST(Runtime, AllocatorIsTheOneBehindMalloc) {
  if (kSanitizedMalloc) GTEST_SKIP() << "AddressSanitizer's allocator is behind malloc";
  EXPECT_EQ(allocator_name(), expected_allocator());
}

TEST(Runtime, ReuseFreedMemoryActsOnGlibcsMallocOnly) { EXPECT_EQ(reuse_freed_memory(), allocator_name() == "glibc"); }

#ifdef __GLIBC__

TEST(Runtime, ReuseFreedMemoryKeepsLargeBlocksInTheHeap) {
  if (kSanitizedMalloc) GTEST_SKIP() << "AddressSanitizer's allocator is behind malloc";
  ASSERT_TRUE(reuse_freed_memory(size_t{256} << 20, size_t{1} << 30));
  // 48 MB is above glibc's largest adaptive mmap threshold (32 MB): by
  // default it would get an mmap of its own and be unmapped when freed
  const size_t size = size_t{48} << 20;
  struct mallinfo2 before = mallinfo2();
  auto* volatile block = static_cast<char*>(std::malloc(size));
  ASSERT_NE(block, nullptr);
  block[0] = 1;
  struct mallinfo2 during = mallinfo2();
  EXPECT_EQ(during.hblkhd, before.hblkhd);  // no mmap of its own
  std::free(block);
  struct mallinfo2 after = mallinfo2();
  EXPECT_EQ(after.arena, during.arena);  // the heap was not trimmed ...
  EXPECT_GE(after.fordblks, size);       // ... the block is free heap now
}

TEST(Runtime, ReuseFreedMemoryRejectsThresholdsBeyondInt) {
  EXPECT_THROW(reuse_freed_memory(size_t{1} << 40, size_t{1} << 30), c10::Error);
}
#endif

}  // namespace
}  // namespace qfx
