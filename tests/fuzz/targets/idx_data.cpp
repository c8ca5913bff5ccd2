// The IDX reader (MNIST's format), plain and gzipped, with and without a
// labels file, in file order and shuffled, every batch read or skipped.
//
// Input: a flags byte, a batch size byte, two bytes (little endian) where
// the labels file starts, then the images file and the labels file.
#include "fuzz/fuzz_target.h"

#include "qfx/io/data_source.h"

#include <c10/util/Exception.h>
#include <zlib.h>

#include <stdexcept>

namespace {

enum IdxFlags : uint8_t {
  kGzip = 1,        // the files are gzipped by the target (valid deflate streams)
  kGzName = 2,      // named .gz, bytes as they come (a broken gzip stream)
  kLabels = 4,      // a labels file next to the images
  kShuffle = 8,     // a seed: items read at random positions
  kNormalize = 16,  // mean and std
  kSkipOdd = 32,    // odd batches skipped, as another rank's
};

/// Bounds the work per input: batches read at most.
constexpr int kMaxBatches = 64;

std::string write_idx(const std::string& name, std::string_view bytes, uint8_t flags) {
  if (!(flags & kGzip)) return qfx::fuzz::scratch_file(name + ((flags & kGzName) ? ".gz" : ""), bytes);
  std::string path = qfx::fuzz::scratch_file(name + ".gz", "");
  gzFile out = gzopen(path.c_str(), "wb");
  if (out == nullptr || gzwrite(out, bytes.data(), static_cast<unsigned>(bytes.size())) != int(bytes.size()) ||
      gzclose(out) != Z_OK) {
    throw std::runtime_error("cannot gzip " + path);
  }
  return path;
}

}  // namespace

QFX_FUZZ_TARGET(idx_data) {
  if (size < 4) return false;
  uint8_t flags = data[0];
  qfx::io::DataOptions options;
  options.batch_size = 1 + data[1] % 16;
  if (flags & kShuffle) options.seed = data[1];
  if (flags & kNormalize) options.mean = {0.5}, options.std = {0.25};
  std::string_view rest = qfx::fuzz::as_text(data + 4, size - 4);
  size_t split = (flags & kLabels) ? std::min<size_t>(data[2] | (data[3] << 8), rest.size()) : rest.size();

  qfx::fuzz::clear_scratch();
  std::string images = write_idx("t-images-idx3-ubyte", rest.substr(0, split), flags);
  if (flags & kLabels) write_idx("t-labels-idx1-ubyte", rest.substr(split), flags);
  try {
    auto source = qfx::io::open_data(images, options);
    int64_t items = 0;
    for (int b = 0; b < kMaxBatches; ++b) {
      if ((flags & kSkipOdd) && b % 2 == 1) {
        if (!source->skip()) break;
        continue;
      }
      auto batch = source->next();
      if (!batch) break;
      items += batch->size();
    }
    qfx::fuzz::require(items <= source->num_items(), "read more items than the source holds");
    return true;
  } catch (const c10::Error&) {
    return false;
  }
}
