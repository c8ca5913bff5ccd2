#pragma once
/// \file
/// Sizes checked before they are allocated or used: what a file asks for
/// against the memory the machine has, and every tensor against the storage
/// it reads. What every reader of model and data files (qfx/io) checks.

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace qfx::io {

/// Bytes this process could still get: MemAvailable + SwapFree of
/// /proc/meminfo (UINT64_MAX when that cannot be read).
uint64_t available_memory();

/// c10::Error "<what> needs X GB, more than the Y GB of memory available"
/// when `bytes` exceed available_memory().
void check_fits_in_memory(uint64_t bytes, const std::string& what);

/// The bytes of storage a tensor of these sizes, strides, offset and element
/// size reads (0 for an empty tensor); UINT64_MAX on overflow.
uint64_t bytes_read(const at::Tensor& tensor);

/// The bytes the file record behind a storage holds; nullopt when unknown.
using RecordSize = std::function<std::optional<uint64_t>(const c10::Storage&)>;

/// c10::Error "<what>[i]...: a tensor of sizes S reads N bytes, its data
/// holds M" for the first tensor in `value` (nested lists, tuples, dicts;
/// [i] its place there) that reads past its storage or past the record the
/// storage was read from (a truncated record).
void check_storages(const c10::IValue& value, const std::string& what, const RecordSize& record_size);

}  // namespace qfx::io
