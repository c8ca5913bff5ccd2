#pragma once
// What the data sources share: option checks, item order, normalization.

#include "qfx/io/data_source.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
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

/// A source that reads its items one at a time, in file order or the seeded
/// order, a batch at a time. Subclasses call set_order() once they know how
/// many items there are and read one batch's items in read_items().
class OrderedItemSource : public DataSource {
 public:
  std::optional<Batch> next() final;
  bool skip() final;
  int64_t num_items() const final { return static_cast<int64_t>(order_.size()); }

 protected:
  explicit OrderedItemSource(const DataOptions& options) : DataSource(options.batch_size), options_(options) {}
  /// Orders `available` items and keeps those the options allow.
  void set_order(int64_t available);
  /// The items at `file_indexes` (their batch positions start at
  /// `first_position`, for errors): `[n, C, ...]` floats in [0, 1] and int64
  /// labels (undefined when the data has none).
  virtual std::pair<at::Tensor, at::Tensor> read_items(const std::vector<int64_t>& file_indexes,
                                                       int64_t first_position) = 0;

  DataOptions options_;

 private:
  std::vector<int64_t> order_;
  int64_t position_ = 0;
};

}  // namespace qfx::io::detail
