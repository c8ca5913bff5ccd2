// `torch.save` files: one tensor (items along dim 0) or a list of batches.
// The format is read whole.

#include "data_sources.h"

#include "data_common.h"

#include "qfx/io/tensor_io.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

namespace qfx::io::detail {
namespace {

class TensorSource final : public DataSource {
 public:
  TensorSource(const std::string& path, const DataOptions& options) : DataSource(options.batch_size) {
    c10::IValue data = io::load_value(path);
    if (data.isTensor()) {
      at::Tensor all = data.toTensor();
      TORCH_CHECK(all.dim() > 0, "data '", path, "': a 0-dim tensor has no items");
      std::vector<int64_t> order = item_order(all.size(0), options.seed);
      order.resize(static_cast<size_t>(items_to_read(all.size(0), options)));
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
    for (int64_t i : order) add_batch(io::as_inputs(items[i], "data '" + path + "' item " + std::to_string(i)));
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
