#pragma once
/// \file
/// Process-wide settings for running models (calibration, evaluation,
/// latency) with qfx.
///
/// \code
///   qfx::reuse_freed_memory();  // once, at the start of the process
/// \endcode

#include <cstddef>
#include <string>

namespace qfx {

/// The allocator behind malloc in this process, named from the shared object
/// that provides `malloc`: "tcmalloc" (the qfx programs link it unless built
/// with `-DQFX_TCMALLOC=OFF`), "jemalloc", "mimalloc" (linked or preloaded),
/// "glibc", or "other".
std::string allocator_name();

/// Makes the C allocator keep freed memory for reuse: blocks up to
/// `max_block` bytes come from the heap instead of an mmap of their own, and
/// up to `keep` bytes of free heap stay in the process instead of going back
/// to the operating system. A forward pass frees and allocates the same
/// activation sizes batch after batch; with glibc's default (adaptive)
/// thresholds the memory goes back after each batch and the next one pays
/// its page faults again. The process's resident size then stays near its
/// peak. Returns false where the allocator is not glibc's malloc (nothing
/// changed) or glibc refused a threshold. The qfx programs (CLI, benchmarks)
/// link tcmalloc, which keeps freed memory in its own heap; there it returns
/// false. They call it at start for builds without tcmalloc
/// (`-DQFX_TCMALLOC=OFF`); equivalent to running a process under
/// `GLIBC_TUNABLES=glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=1073741824`.
bool reuse_freed_memory(size_t max_block = size_t{256} << 20, size_t keep = size_t{1} << 30);

}  // namespace qfx
