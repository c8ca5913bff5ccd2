#pragma once
// A crash of LibTorch's loaders made an error. Internal to src/io.

#include <functional>
#include <string>

namespace qfx::io::detail {

/// Runs `load` once in a forked child process, before the caller runs it
/// itself. LibTorch's TorchScript loader was not written for hostile input:
/// a damaged class body in an archive's code makes its compiler dereference
/// a wild pointer. When the child neither returns nor throws (it dies of a
/// signal, or a sanitizer's report ends it), this raises c10::Error
/// "<what>: LibTorch crashed (<how>) loading it: the archive's code or
/// pickles are corrupt"; otherwise it returns (the caller's own run reports
/// an error as usual). Without fork (no
/// resources) it returns at once. The child's output is discarded.
void check_load_does_not_crash(const std::function<void()>& load, const std::string& what);

}  // namespace qfx::io::detail
