#pragma once
// What the data sources share: option checks, item order, normalization.

#include "qfx/io/data_source.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qfx::io::detail {

/// c10::Error naming `path` for invalid options (batch size, mean/std).
void check_options(const DataOptions& options, const std::string& path);

/// How many of `available` items a source yields (max_batches).
int64_t items_to_read(int64_t available, const DataOptions& options);

/// 0..n-1 in file order, or shuffled by `seed` (Fisher-Yates over
/// std::mt19937_64, the same on every platform).
std::vector<int64_t> item_order(int64_t n, const std::optional<uint64_t>& seed);

/// `(x - mean[c]) / std[c]` over dim 1 of `[B, C, ...]` (one value: all channels).
at::Tensor normalize(const at::Tensor& x, const DataOptions& options);

}  // namespace qfx::io::detail
