// Image folders: one sub-folder per class, PNG/JPEG files decoded with
// stb_image, resized (shorter side) and center-cropped, one item at a time.

#include "data_sources.h"
#include "qfx/io/memory_bounds.h"

#include "data_common.h"
#include "image_checks.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_FAILURE_USERMSG
#include "qfx_stb_image.h"  // Debian's stb/stb_image.h with a bounds check (cmake/stb_image.cmake)

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>

namespace qfx::io::detail {
namespace {

namespace fs = std::filesystem;

bool is_image(const fs::path& file) {
  std::string ext = file.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

std::vector<fs::path> sorted_entries(const fs::path& dir, bool directories) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (directories ? entry.is_directory() : (entry.is_regular_file() && is_image(entry.path()))) {
      out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<unsigned char> read_file(const fs::path& file, int64_t index) {
  std::ifstream in(file, std::ios::binary);
  TORCH_CHECK(in, "data item ", index, ": cannot open image '", file.string(), "'");
  check_fits_in_memory(fs::file_size(file), "data item " + std::to_string(index) + " ('" + file.string() + "')");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// `[3, crop, crop]` floats in [0, 1]: decoded as RGB, shorter side resized
/// to `resize` (bilinear), center-cropped.
at::Tensor load_image(const fs::path& file, int64_t index, const DataOptions& options) {
  const std::vector<unsigned char> bytes = read_file(file, index);
  const std::string what = "data item " + std::to_string(index) + ": image '" + file.string() + "'";
  check_png_crcs(bytes, what);
  check_jpeg_huffman_tables(bytes, what);
  const auto* data = bytes.data();
  const int size = static_cast<int>(std::min<size_t>(bytes.size(), INT32_MAX));
  int width = 0, height = 0, channels = 0;
  if (stbi_info_from_memory(data, size, &width, &height, &channels) == 1) {  // sizes from the header, before decoding
    const double scale = static_cast<double>(options.resize_size) / std::max(1, std::min(width, height));
    const double resized = std::max<double>(options.crop_size, height * scale) *
                           std::max<double>(options.crop_size, width * scale) * 3 * sizeof(float);
    check_fits_in_memory(static_cast<uint64_t>(std::min(resized, 1.8e19)) + 16ull * width * height,
                         "data item " + std::to_string(index) + " ('" + file.string() + "', " + std::to_string(width) +
                             "x" + std::to_string(height) + " resized to shorter side " +
                             std::to_string(options.resize_size) + ")");
  }
  std::unique_ptr<unsigned char, void (*)(void*)> pixels(
      stbi_load_from_memory(data, size, &width, &height, &channels, 3), stbi_image_free);
  TORCH_CHECK(pixels != nullptr, "data item ", index, ": cannot decode image '", file.string(),
              "': ", stbi_failure_reason());
  at::Tensor image = at::from_blob(pixels.get(), {height, width, 3}, at::kByte)
                         .permute({2, 0, 1})
                         .unsqueeze(0)
                         .to(at::kFloat)
                         .div_(255.0);
  double scale = static_cast<double>(options.resize_size) / std::min(width, height);
  int64_t h = std::max<int64_t>(options.crop_size, std::llround(height * scale));
  int64_t w = std::max<int64_t>(options.crop_size, std::llround(width * scale));
  image = at::upsample_bilinear2d(image, {h, w}, /*align_corners=*/false);
  int64_t top = (h - options.crop_size) / 2, left = (w - options.crop_size) / 2;
  return image.slice(2, top, top + options.crop_size).slice(3, left, left + options.crop_size).squeeze(0);
}

class ImageFolderSource final : public OrderedItemSource {
 public:
  ImageFolderSource(const std::string& path, const DataOptions& options) : OrderedItemSource(options) {
    std::vector<fs::path> classes = sorted_entries(path, /*directories=*/true);
    TORCH_CHECK(!classes.empty(), "data folder '", path, "' has no class sub-folders");
    for (size_t label = 0; label < classes.size(); ++label) {
      for (const fs::path& file : sorted_entries(classes[label], /*directories=*/false)) {
        items_.push_back({file, static_cast<int64_t>(label)});
      }
    }
    TORCH_CHECK(!items_.empty(), "data folder '", path, "' holds no PNG or JPEG images");
    num_classes_ = static_cast<int64_t>(classes.size());
    set_order(static_cast<int64_t>(items_.size()));
  }

  int64_t num_classes() const override { return num_classes_; }

 private:
  std::pair<at::Tensor, at::Tensor> read_items(const std::vector<int64_t>& file_indexes,
                                               int64_t first_position) override {
    auto n = static_cast<int64_t>(file_indexes.size());
    std::vector<at::Tensor> images;
    at::Tensor labels = at::empty({n}, at::kLong);
    for (int64_t i = 0; i < n; ++i) {
      const Item& item = items_[file_indexes[i]];
      images.push_back(load_image(item.file, first_position + i, options_));
      labels[i] = item.label;
    }
    return {at::stack(images), labels};
  }

  struct Item {
    fs::path file;
    int64_t label;
  };
  std::vector<Item> items_;
  int64_t num_classes_ = 0;
};

}  // namespace

std::unique_ptr<DataSource> open_image_folder(const std::string& path, const DataOptions& options) {
  return std::make_unique<ImageFolderSource>(path, options);
}

}  // namespace qfx::io::detail
