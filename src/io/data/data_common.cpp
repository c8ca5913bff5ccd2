// Option checks, item order and normalization shared by the data sources.

#include "data_common.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace qfx::io {

int64_t Batch::size() const {
  if (inputs.empty()) return 0;
  const c10::IValue& first = inputs.front();
  return first.isTensor() && first.toTensor().dim() > 0 ? first.toTensor().size(0) : 1;
}

int64_t DataSource::num_batches() const { return (num_items() + batch_size_ - 1) / batch_size_; }

namespace detail {

void check_options(const DataOptions& options, const std::string& path) {
  TORCH_CHECK(options.batch_size > 0, "data '", path, "': batch size must be positive, got ", options.batch_size);
  TORCH_CHECK(options.max_batches >= 0, "data '", path, "': the batch limit must not be negative");
  TORCH_CHECK(options.mean.size() == options.std.size(), "data '", path, "': ", options.mean.size(),
              " mean value(s) but ", options.std.size(), " std value(s)");
  for (double s : options.std) {
    TORCH_CHECK(std::isfinite(s) && s > 0, "data '", path, "': std values must be positive and finite, got ", s);
  }
  for (double m : options.mean) TORCH_CHECK(std::isfinite(m), "data '", path, "': mean values must be finite, got ", m);
  TORCH_CHECK(options.crop_size > 0 && options.resize_size >= options.crop_size, "data '", path, "': the resize size (",
              options.resize_size, ") must be at least the crop size (", options.crop_size, ")");
}

int64_t items_to_read(int64_t available, const DataOptions& options) {
  if (options.max_batches == 0 || options.max_batches > available / options.batch_size) return available;
  return std::min(available, options.max_batches * options.batch_size);
}

std::vector<int64_t> item_order(int64_t n, const std::optional<uint64_t>& seed) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (!seed) return order;
  std::mt19937_64 rng(*seed);
  for (int64_t i = n - 1; i > 0; --i) {
    auto j = static_cast<int64_t>(rng() % static_cast<uint64_t>(i + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

at::Tensor normalize(const at::Tensor& x, const DataOptions& options) {
  if (options.mean.empty()) return x;
  int64_t channels = x.size(1);
  TORCH_CHECK(options.mean.size() == 1 || static_cast<int64_t>(options.mean.size()) == channels, "normalization has ",
              options.mean.size(), " mean values for data with ", channels, " channels");
  std::vector<int64_t> shape(x.dim(), 1);
  shape[1] = static_cast<int64_t>(options.mean.size());
  at::Tensor mean = at::tensor(options.mean, at::kDouble).to(x.scalar_type()).reshape(shape);
  at::Tensor std = at::tensor(options.std, at::kDouble).to(x.scalar_type()).reshape(shape);
  return (x - mean) / std;
}

void OrderedItemSource::set_order(int64_t available) {
  order_ = item_order(available, options_.seed);
  order_.resize(static_cast<size_t>(items_to_read(available, options_)));
}

std::optional<Batch> OrderedItemSource::next() {
  if (position_ >= num_items()) return std::nullopt;
  int64_t n = std::min<int64_t>(batch_size_, num_items() - position_);
  std::vector<int64_t> indexes(order_.begin() + position_, order_.begin() + position_ + n);
  auto [inputs, labels] = read_items(indexes, position_);
  Batch batch;
  batch.inputs = {normalize(inputs, options_)};
  batch.labels = labels;
  batch.first_index = position_;
  position_ += n;
  return batch;
}

bool OrderedItemSource::skip() {
  if (position_ >= num_items()) return false;
  position_ += std::min<int64_t>(batch_size_, num_items() - position_);
  return true;
}

}  // namespace detail
}  // namespace qfx::io
