// The image folder reader: PNG and JPEG files decoded, resized, cropped
// and normalized.
//
// Input: a flags byte, a resize byte, a crop byte, then the image file.
// Most mutations of a PNG break a chunk's CRC, which the reader checks
// first; with kFixCrcs the target recomputes them, so that the decoder
// behind the check is reached as well.
#include "fuzz/fuzz_target.h"

#include "qfx/io/data_source.h"

#include <c10/util/Exception.h>
#include <zlib.h>

#include <string>

namespace {

enum ImageFlags : uint8_t {
  kFixCrcs = 1,     // every whole PNG chunk gets its right CRC
  kJpegName = 2,    // named .jpg (the decoder goes by content either way)
  kTwoClasses = 4,  // the image again in a second class
};

uint32_t read_be32(const std::string& s, size_t at) {
  auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(s[at + i])); };
  return (b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3);
}

void write_be32(std::string& s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) s[at + i] = static_cast<char>(v >> (24 - 8 * i));
}

/// Sets the CRC of every chunk that lies wholly in the file.
void fix_png_crcs(std::string& png) {
  size_t at = 8;  // after the signature
  while (at + 12 <= png.size()) {
    uint64_t length = read_be32(png, at);
    if (at + 12 + length > png.size()) return;
    auto crc = crc32(0, reinterpret_cast<const Bytef*>(png.data() + at + 4), static_cast<uInt>(4 + length));
    write_be32(png, at + 8 + length, static_cast<uint32_t>(crc));
    at += 12 + length;
  }
}

}  // namespace

QFX_FUZZ_TARGET(image_data) {
  if (size < 3) return false;
  uint8_t flags = data[0];
  qfx::io::DataOptions options;
  options.resize_size = 1 + data[1] % 64;
  options.crop_size = 1 + data[2] % options.resize_size;
  options.batch_size = 2;
  options.mean = {0.485, 0.456, 0.406};
  options.std = {0.229, 0.224, 0.225};
  std::string image(qfx::fuzz::as_text(data + 3, size - 3));
  if (flags & kFixCrcs) fix_png_crcs(image);

  qfx::fuzz::clear_scratch();
  std::string name = (flags & kJpegName) ? "a.jpg" : "a.png";
  std::string file = qfx::fuzz::scratch_file("images/c0/" + name, image);
  if (flags & kTwoClasses) qfx::fuzz::scratch_file("images/c1/" + name, image);
  std::string folder = file.substr(0, file.size() - ("c0/" + name).size() - 1);
  try {
    auto source = qfx::io::open_data(folder, options);
    while (auto batch = source->next()) {
      const at::Tensor& x = batch->inputs.at(0).toTensor();
      qfx::fuzz::require(x.size(2) == options.crop_size && x.size(3) == options.crop_size,
                         "an image batch is not of the crop size");
    }
    return true;
  } catch (const c10::Error&) {
    return false;
  }
}
