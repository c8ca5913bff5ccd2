// IDX files (MNIST, Fashion-MNIST), gzipped or not, read item by item:
// sequentially from the (compressed) stream, or, for a shuffled order, from
// a temporary uncompressed copy that allows seeking.

#include "data_sources.h"
#include "qfx/io/memory_bounds.h"

#include "data_common.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <zlib.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>

namespace qfx::io::detail {
namespace {

/// Bytes of one IDX item qfx accepts (a 16384 x 16384 image).
constexpr int64_t kMaxItemBytes = int64_t{1} << 28;

/// Deflate's largest expansion: a gzip file of N bytes inflates to at most
/// about 1032 N bytes.
constexpr double kMaxGzipRatio = 1032;

/// One IDX file: header, then items of `item_bytes` unsigned bytes.
class IdxFile {
 public:
  IdxFile(const std::string& path, int expected_dims, bool random_access) : path_(path) {
    file_.reset(gzopen(path.c_str(), "rb"));
    TORCH_CHECK(file_ != nullptr, "cannot open data file '", path, "'");
    std::array<unsigned char, 4> magic = bytes<4>();
    TORCH_CHECK(magic[0] == 0 && magic[1] == 0 && magic[2] == 0x08 && magic[3] == expected_dims, "'", path,
                "' is not an IDX file of unsigned bytes with ", expected_dims, " dimension(s)");
    for (int i = 0; i < expected_dims; ++i) {
      std::array<unsigned char, 4> b = bytes<4>();
      dims_.push_back((int64_t(b[0]) << 24) | (int64_t(b[1]) << 16) | (int64_t(b[2]) << 8) | int64_t(b[3]));
    }
    item_bytes_ = 1;
    for (size_t i = 1; i < dims_.size(); ++i) {
      TORCH_CHECK(dims_[i] > 0 && item_bytes_ <= kMaxItemBytes / dims_[i], "'", path, "': an item of ",
                  c10::IntArrayRef(dims_).slice(1), " bytes is not an image qfx reads (at most ", kMaxItemBytes,
                  " bytes)");
      item_bytes_ *= dims_[i];
    }
    check_count(4 * (expected_dims + 1));
    if (random_access) copy_to_temporary();
  }
  IdxFile(const IdxFile&) = delete;
  IdxFile& operator=(const IdxFile&) = delete;

  int64_t count() const { return dims_.at(0); }
  const std::vector<int64_t>& dims() const { return dims_; }

  /// Item `index` into `out` (item_bytes bytes). Without random access the
  /// indexes must come in file order (items between are skipped).
  void read(int64_t index, unsigned char* out) {
    TORCH_CHECK(index >= 0 && index < count(), "'", path_, "': no item ", index);
    if (copy_ != nullptr) {
      TORCH_CHECK(std::fseek(copy_.get(), static_cast<long>(index * item_bytes_), SEEK_SET) == 0 &&
                      std::fread(out, 1, item_bytes_, copy_.get()) == static_cast<size_t>(item_bytes_),
                  "'", path_, "': cannot read item ", index);
      return;
    }
    TORCH_CHECK(index >= next_, "'", path_, "': items must be read in order");
    if (index > next_) {
      TORCH_CHECK(gzseek(file_.get(), static_cast<z_off_t>((index - next_) * item_bytes_), SEEK_CUR) >= 0, "'", path_,
                  "': truncated before item ", index, " of ", count());
      next_ = index;
    }
    int got = gzread(file_.get(), out, static_cast<unsigned>(item_bytes_));
    TORCH_CHECK(got == item_bytes_, "'", path_, "': truncated at item ", index, " of ", count());
    ++next_;
  }

 private:
  template <size_t N>
  std::array<unsigned char, N> bytes() {
    std::array<unsigned char, N> b{};
    TORCH_CHECK(gzread(file_.get(), b.data(), N) == static_cast<int>(N), "'", path_,
                "' is not an IDX file (too short)");
    return b;
  }

  /// The header's item count against what the file can hold (before the
  /// item order, 8 bytes an item, is allocated): exactly for a plain file,
  /// within deflate's largest expansion for a gzip file.
  void check_count(int64_t header_bytes) {
    const double file_bytes = static_cast<double>(std::filesystem::file_size(path_));
    const bool plain = gzdirect(file_.get()) == 1;
    const double room = plain ? file_bytes - header_bytes : file_bytes * kMaxGzipRatio;
    const double needed = static_cast<double>(count()) * static_cast<double>(item_bytes_);
    TORCH_CHECK(needed <= room, "'", path_, "': the header counts ", count(), " items of ", item_bytes_,
                " bytes, but the file ", plain ? "holds " : "can inflate to at most ", static_cast<int64_t>(room),
                " bytes after its header");
  }

  void copy_to_temporary() {
    copy_.reset(std::tmpfile());
    TORCH_CHECK(copy_ != nullptr, "'", path_, "': cannot create a temporary file to shuffle items");
    std::vector<unsigned char> buffer(size_t{1} << 20);  // copied in chunks, whatever the item size
    int64_t left = count() * item_bytes_;
    while (left > 0) {
      auto want = static_cast<unsigned>(std::min<int64_t>(left, static_cast<int64_t>(buffer.size())));
      int got = gzread(file_.get(), buffer.data(), want);
      TORCH_CHECK(got == static_cast<int>(want), "'", path_, "': truncated (", left, " bytes missing)");
      TORCH_CHECK(std::fwrite(buffer.data(), 1, want, copy_.get()) == want, "'", path_,
                  "': cannot write the temporary copy");
      left -= want;
    }
  }

  std::string path_;
  // closed by their owners, also when the constructor throws
  struct GzClose {
    void operator()(gzFile f) const { gzclose(f); }
  };
  struct FileClose {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<gzFile_s, GzClose> file_;
  std::unique_ptr<std::FILE, FileClose> copy_;
  std::vector<int64_t> dims_;
  int64_t item_bytes_ = 0;
  int64_t next_ = 0;
};

/// `…-images-idx3-ubyte[.gz]` -> `…-labels-idx1-ubyte[.gz]`, if that exists.
std::string labels_path(const std::string& images) {
  std::string name = std::filesystem::path(images).filename().string();
  size_t at = name.find("images-idx3");
  if (at == std::string::npos) return "";
  name.replace(at, 11, "labels-idx1");
  std::filesystem::path labels = std::filesystem::path(images).parent_path() / name;
  return std::filesystem::exists(labels) ? labels.string() : "";
}

class IdxSource final : public OrderedItemSource {
 public:
  IdxSource(const std::string& path, const DataOptions& options)
      : OrderedItemSource(options), images_(path, 3, options.seed.has_value()) {
    std::string labels = labels_path(path);
    if (!labels.empty()) {
      labels_ = std::make_unique<IdxFile>(labels, 1, options.seed.has_value());
      TORCH_CHECK(labels_->count() == images_.count(), "'", labels, "' holds ", labels_->count(), " labels for ",
                  images_.count(), " images in '", path, "'");
    }
    set_order(images_.count());
    const int64_t item_floats = images_.dims()[1] * images_.dims()[2];
    const double batch_bytes = static_cast<double>(options.batch_size) * static_cast<double>(item_floats) * 5;
    check_fits_in_memory(static_cast<uint64_t>(std::min(batch_bytes, 1.8e19)),
                         "a batch of " + std::to_string(options.batch_size) + " items of '" + path + "'");
  }

  int64_t num_classes() const override { return labels_ ? 10 : 0; }

 private:
  std::pair<at::Tensor, at::Tensor> read_items(const std::vector<int64_t>& file_indexes, int64_t) override {
    auto n = static_cast<int64_t>(file_indexes.size());
    int64_t rows = images_.dims()[1], cols = images_.dims()[2];
    at::Tensor pixels = at::empty({n, 1, rows, cols}, at::kByte);
    at::Tensor labels = labels_ ? at::empty({n}, at::kByte) : at::Tensor();
    for (int64_t i = 0; i < n; ++i) {
      images_.read(file_indexes[i], pixels.data_ptr<uint8_t>() + i * rows * cols);
      if (labels_) labels_->read(file_indexes[i], labels.data_ptr<uint8_t>() + i);
    }
    return {pixels.to(at::kFloat).div_(255.0), labels.defined() ? labels.to(at::kLong) : at::Tensor()};
  }

  IdxFile images_;
  std::unique_ptr<IdxFile> labels_;
};

}  // namespace

bool is_idx_file(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  return name.find("-idx") != std::string::npos && name.find("-ubyte") != std::string::npos;
}

std::unique_ptr<DataSource> open_idx(const std::string& path, const DataOptions& options) {
  return std::make_unique<IdxSource>(path, options);
}

}  // namespace qfx::io::detail
