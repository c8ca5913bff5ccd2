// BlasThreadsCap: OpenBLAS's thread count lowered while a cap lives and put
// back when the last cap goes, also with caps on two threads at once.

#include "../../src/ir/blas_threads.h"
#include "support/openblas.h"

#include <gtest/gtest.h>

#include <future>
#include <optional>

namespace qfx::ir::detail {
namespace {

using test::openblas_threads;

TEST(BlasThreadsCap, LowersOpenBlasThreadsWhileAlive) {
  test::OpenBlasThreadsGuard four(4);
  {
    BlasThreadsCap cap(1);
    EXPECT_EQ(openblas_threads(), 1);
  }
  EXPECT_EQ(openblas_threads(), 4);
  {
    BlasThreadsCap cap(6);  // above the count: no change
    EXPECT_EQ(openblas_threads(), 4);
  }
  {
    BlasThreadsCap cap(0);  // at least one thread
    EXPECT_EQ(openblas_threads(), 1);
  }
  EXPECT_EQ(openblas_threads(), 4);
}

TEST(BlasThreadsCap, TheLastCapGoneRestores) {
  test::OpenBlasThreadsGuard four(4);
  std::optional<BlasThreadsCap> first(3);
  EXPECT_EQ(openblas_threads(), 3);
  std::promise<void> made, done;
  auto other = std::async(std::launch::async, [&] {
    BlasThreadsCap second(2);  // on another thread, lower still
    made.set_value();
    done.get_future().wait();
  });
  made.get_future().wait();
  EXPECT_EQ(openblas_threads(), 2);
  first.reset();  // the other thread's cap still lives
  EXPECT_EQ(openblas_threads(), 2);
  done.set_value();
  other.get();
  EXPECT_EQ(openblas_threads(), 4);
}

}  // namespace
}  // namespace qfx::ir::detail
