#pragma once
// BLAS threads while observers run beside the float forward: OpenBLAS (the
// pthreads build that LibTorch's float path calls for its sgemm-based ops,
// such as 1x1 convolutions outside oneDNN) starts a worker per core and keeps
// it spinning for a while after each call, on the core the observer thread
// needs; afterwards the spinning also slows whatever runs next (convert_fx).
// Results do not change: OpenBLAS splits a product's rows and columns between
// its threads, never the sums.

namespace qfx::ir::detail {

/// Caps OpenBLAS's thread count at `most` while any cap is alive, process-wide
/// (the first cap made lowers the count, the last one gone restores it; caps
/// on several threads at once agree on the lowest). Does nothing when the
/// process's BLAS is not OpenBLAS or already runs on `most` threads or fewer.
class BlasThreadsCap {
 public:
  explicit BlasThreadsCap(int most);
  ~BlasThreadsCap();
  BlasThreadsCap(const BlasThreadsCap&) = delete;
  BlasThreadsCap& operator=(const BlasThreadsCap&) = delete;
};

}  // namespace qfx::ir::detail
