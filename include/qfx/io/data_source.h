#pragma once
/// \file
/// Data for calibration and evaluation, read in batches: memory holds one
/// batch, never the whole data set (a `torch.save` tensor file, which can
/// only be read whole, is the exception).
///
/// - `*.pt`: a file written by `torch.save`: one tensor (items along dim 0),
///   or a list whose items are batches (a tensor, or a tuple of tensors for
///   several inputs). No labels.
/// - IDX files (MNIST, Fashion-MNIST), gzipped or not: the images file
///   (`…-images-idx3-ubyte[.gz]`); labels come from the labels file next to
///   it (`…-labels-idx1-ubyte[.gz]`) when there is one. Items are
///   `[1, rows, cols]` floats in [0, 1], then `(x - mean) / std`.
/// - A folder of PNG/JPEG images, one sub-folder per class (sorted names are
///   labels 0, 1, ...): decoded as RGB, resized so the shorter side is
///   `resize_size`, center-cropped to `crop_size`, scaled to [0, 1], then
///   `(x - mean[c]) / std[c]` (ImageNet-style preprocessing).
///
/// A file that cannot be read or decoded is a c10::Error naming it (and the
/// item's index).
///
/// \code
///   qfx::io::DataOptions options;
///   options.batch_size = 32;
///   options.mean = {0.2860};
///   options.std = {0.3530};
///   auto data = qfx::io::open_data("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz", options);
///   while (auto batch = data->next()) model.forward(batch->inputs);
/// \endcode

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qfx::io {

/// One batch of items.
struct Batch {
  std::vector<c10::IValue> inputs;  ///< one value per model input
  at::Tensor labels;                ///< int64 `[B]`; undefined when the data has none
  int64_t first_index = 0;          ///< position of the batch's first item in the order read

  /// Items in the batch: dim 0 of the first input (1 for a scalar or non-tensor input).
  int64_t size() const;
};

/// How data is batched, ordered and normalized.
struct DataOptions {
  int64_t batch_size = 8;
  int64_t max_batches = 0;  ///< 0: all
  /// Per channel (one value for all channels); empty: no normalization.
  std::vector<double> mean, std;
  /// Shuffles items with this seed (the same seed, the same order);
  /// unset: file order.
  std::optional<uint64_t> seed;
  int64_t resize_size = 256;  ///< image folders: shorter side after resizing
  int64_t crop_size = 224;    ///< image folders: center crop
};

/// A source of batches, read lazily in a fixed order.
class DataSource {
 public:
  explicit DataSource(int64_t batch_size) : batch_size_(batch_size) {}
  virtual ~DataSource() = default;
  /// The next batch; nullopt after the last.
  virtual std::optional<Batch> next() = 0;
  /// Moves past the next batch without decoding it (a rank skips the batches
  /// of the others); false after the last.
  virtual bool skip() { return next().has_value(); }
  /// Items it yields in all (at most max_batches * batch_size).
  virtual int64_t num_items() const = 0;
  /// Batches it yields in all.
  virtual int64_t num_batches() const;
  /// Number of classes when the data has labels (IDX: 10; folders: sub-folders), else 0.
  virtual int64_t num_classes() const { return 0; }

 protected:
  int64_t batch_size_;
};

/// The source for `path` by its kind (see above); c10::Error naming the
/// path when it is missing, unreadable or of no known kind, or when the
/// options are invalid.
std::unique_ptr<DataSource> open_data(const std::string& path, const DataOptions& options);

}  // namespace qfx::io
