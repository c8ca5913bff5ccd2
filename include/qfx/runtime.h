#pragma once
/// \file
/// Process-wide settings for running models (calibration, evaluation,
/// latency) with qfx.
///
/// \code
///   qfx::reuse_freed_memory();  // once, at the start of the process
/// \endcode

#include <cstddef>

namespace qfx {

/// Makes the C allocator keep freed memory for reuse: blocks up to
/// `max_block` bytes come from the heap instead of an mmap of their own, and
/// up to `keep` bytes of free heap stay in the process instead of going back
/// to the operating system. A forward pass frees and allocates the same
/// activation sizes batch after batch; with glibc's default (adaptive)
/// thresholds the memory goes back after each batch and the next one pays
/// its page faults again. The process's resident size then stays near its
/// peak. Returns false where the C library is not glibc (nothing changed)
/// or glibc refused a threshold.
/// The `qfx` CLI calls it at start; equivalent to running a process under
/// `GLIBC_TUNABLES=glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=1073741824`.
bool reuse_freed_memory(size_t max_block = size_t{256} << 20, size_t keep = size_t{1} << 30);

}  // namespace qfx
