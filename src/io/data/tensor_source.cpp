// `torch.save` files: one tensor (items along dim 0) or a list of batches.
// The format is read whole.

#include "data_sources.h"

#include "data_common.h"

#include "qfx/io/memory_bounds.h"
#include "qfx/io/tensor_io.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

namespace qfx::io::detail {
namespace {

/// The bytes of every element of the tensors in `values`: what an expanded
/// (stride-0) tensor takes once an op copies it.
uint64_t logical_bytes(const std::vector<c10::IValue>& values) {
  uint64_t total = 0;
  for (const c10::IValue& v : values) {
    if (v.isTensor()) total += static_cast<uint64_t>(v.toTensor().numel()) * v.toTensor().element_size();
    if (v.isList() || v.isTuple()) {
      total += logical_bytes(v.isList() ? v.toListRef().vec() : v.toTupleRef().elements().vec());
    }
  }
  return total;
}

/// `[1, 28, 28]`.
std::string sizes_text(const at::Tensor& t) {
  std::string out = "[";
  for (int64_t i = 0; i < t.dim(); ++i) out += (i ? ", " : "") + std::to_string(t.size(i));
  return out + "]";
}

class TensorSource final : public DataSource {
 public:
  TensorSource(const std::string& path, const DataOptions& options) : DataSource(options.batch_size) {
    c10::IValue data = io::load_value(path);
    if (data.isTensor()) {
      at::Tensor all = data.toTensor();
      TORCH_CHECK(all.dim() > 0, "data '", path, "': a 0-dim tensor has no items");
      std::vector<int64_t> order = item_order(all.size(0), options.seed);
      order.resize(static_cast<size_t>(items_to_read(all.size(0), options)));
      // an expanded (stride-0) tensor holds far less than its items take once copied into batches
      if (!order.empty()) {
        uint64_t per_item = static_cast<uint64_t>(all[0].numel()) * all.element_size();
        check_fits_in_memory(per_item * order.size(), "data '" + path + "' (" + std::to_string(order.size()) +
                                                          " items of " + sizes_text(all[0]) + ", read into batches)");
      }
      all = all.index_select(0, at::tensor(order, at::kLong));
      for (const at::Tensor& b : all.split(options.batch_size)) add_batch({b});
      return;
    }
    TORCH_CHECK(data.isList() || data.isTuple(), "data '", path, "' must hold a tensor or a list of batches, not a ",
                data.tagKind());
    auto items = data.isList() ? data.toListRef().vec() : data.toTupleRef().elements().vec();
    std::vector<int64_t> order = item_order(static_cast<int64_t>(items.size()), options.seed);
    if (options.max_batches > 0 && static_cast<int64_t>(order.size()) > options.max_batches) {
      order.resize(static_cast<size_t>(options.max_batches));
    }
    for (int64_t i : order) {
      std::string what = "data '" + path + "' item " + std::to_string(i);
      std::vector<c10::IValue> inputs = io::as_inputs(items[i], what);
      check_fits_in_memory(logical_bytes(inputs), what + " (its tensors' elements, as a model reads them)");
      add_batch(std::move(inputs));
    }
  }

  std::optional<Batch> next() override {
    if (next_ >= batches_.size()) return std::nullopt;
    return std::move(batches_[next_++]);
  }

  int64_t num_items() const override { return items_; }
  int64_t num_batches() const override { return static_cast<int64_t>(batches_.size()); }

 private:
  void add_batch(std::vector<c10::IValue> inputs) {
    Batch batch;
    batch.inputs = std::move(inputs);
    batch.first_index = items_;
    items_ += batch.size();
    batches_.push_back(std::move(batch));
  }

  std::vector<Batch> batches_;  // with their first indexes
  int64_t items_ = 0;
  size_t next_ = 0;
};

}  // namespace

std::unique_ptr<DataSource> open_tensor_file(const std::string& path, const DataOptions& options) {
  return std::make_unique<TensorSource>(path, options);
}

}  // namespace qfx::io::detail
