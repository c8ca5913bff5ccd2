// Data sources: IDX files (plain and gzipped) and image folders written by
// the test with known contents, tensor files, and Debian's Fashion-MNIST
// test set against what Python reads from it (fixture).

#include "support/fixtures.h"

#include "qfx/io/data_source.h"
#include "qfx/io/tensor_io.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <zlib.h>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

namespace qfx {
namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) / "qfx_data_test";
  fs::create_directories(dir);
  return (dir / name).string();
}

std::vector<unsigned char> big_endian(std::initializer_list<uint32_t> values) {
  std::vector<unsigned char> out;
  for (uint32_t v : values) {
    for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<unsigned char>(v >> shift));
  }
  return out;
}

/// An IDX pair of 5 images 2x3 (pixel = 10 * item + position) and labels 4 - item.
std::string write_idx(const std::string& stem, bool gzipped) {
  std::vector<unsigned char> images = big_endian({0x803, 5, 2, 3}), labels = big_endian({0x801, 5});
  for (int item = 0; item < 5; ++item) {
    for (int p = 0; p < 6; ++p) images.push_back(static_cast<unsigned char>(10 * item + p));
    labels.push_back(static_cast<unsigned char>(4 - item));
  }
  std::string suffix = gzipped ? ".gz" : "";
  auto write = [&](const std::string& path, const std::vector<unsigned char>& bytes) {
    gzFile f = gzopen(path.c_str(), gzipped ? "wb" : "wbT");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
  };
  std::string images_path = temp_path(stem + "-images-idx3-ubyte" + suffix);
  write(images_path, images);
  write(temp_path(stem + "-labels-idx1-ubyte" + suffix), labels);
  return images_path;
}

std::vector<io::Batch> all_batches(io::DataSource& source) {
  std::vector<io::Batch> out;
  while (auto b = source.next()) out.push_back(std::move(*b));
  return out;
}

TEST(DataSource, IdxFilesPlainAndGzipped) {
  for (bool gzipped : {false, true}) {
    io::DataOptions options;
    options.batch_size = 2;
    auto source = io::open_data(write_idx(gzipped ? "gz" : "plain", gzipped), options);
    EXPECT_EQ(source->num_items(), 5);
    EXPECT_EQ(source->num_batches(), 3);
    EXPECT_EQ(source->num_classes(), 10);
    std::vector<io::Batch> batches = all_batches(*source);
    ASSERT_EQ(batches.size(), 3u);
    EXPECT_EQ(batches[2].inputs[0].toTensor().sizes(), (std::vector<int64_t>{1, 1, 2, 3}));
    at::Tensor first = batches[0].inputs[0].toTensor();
    EXPECT_EQ(first.sizes(), (std::vector<int64_t>{2, 1, 2, 3}));
    EXPECT_FLOAT_EQ(first[1][0][1][2].item<float>(), 15.0f / 255.0f);  // item 1, position 5
    EXPECT_TRUE(batches[1].labels.equal(at::tensor({2, 1}, at::kLong)));
    EXPECT_EQ(batches[2].first_index, 4);
  }
}

TEST(DataSource, NormalizesShufflesAndLimits) {
  std::string path = write_idx("norm", true);
  io::DataOptions options;
  options.batch_size = 5;
  options.mean = {0.5};
  options.std = {0.25};
  at::Tensor x = io::open_data(path, options)->next()->inputs[0].toTensor();
  EXPECT_FLOAT_EQ(x[0][0][0][0].item<float>(), (0.0f - 0.5f) / 0.25f);
  EXPECT_FLOAT_EQ(x[4][0][1][2].item<float>(), (45.0f / 255.0f - 0.5f) / 0.25f);

  options.mean.clear();
  options.std.clear();
  options.seed = 7;
  auto labels_of = [&] { return io::open_data(path, options)->next()->labels; };
  at::Tensor shuffled = labels_of();
  EXPECT_TRUE(shuffled.equal(labels_of())) << "same seed, same order";
  EXPECT_TRUE(std::get<0>(shuffled.sort()).equal(at::arange(5, at::kLong))) << "a permutation";
  EXPECT_FALSE(shuffled.equal(at::tensor({4, 3, 2, 1, 0}, at::kLong))) << "not file order";

  options.seed.reset();
  options.batch_size = 2;
  options.max_batches = 2;
  auto limited = io::open_data(path, options);
  EXPECT_EQ(limited->num_items(), 4);
  EXPECT_EQ(all_batches(*limited).size(), 2u);
}

TEST(DataSource, BadFilesAreErrorsNamingThem) {
  std::string truncated = temp_path("trunc-images-idx3-ubyte");
  std::vector<unsigned char> bytes = big_endian({0x803, 5, 2, 3});
  bytes.resize(bytes.size() + 8);  // one and a bit of 5 images
  std::ofstream(truncated, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  io::DataOptions options;
  options.batch_size = 4;
  std::string error = test::error_of([&] { io::open_data(truncated, options)->next(); });
  EXPECT_NE(error.find("trunc-images-idx3-ubyte': the header counts 5 items of 6 bytes, but the file holds 8 bytes"),
            std::string::npos)
      << error;

  std::string huge = temp_path("huge-images-idx3-ubyte");  // 2^31 items of 28 x 28 in a 784-byte file
  bytes = big_endian({0x803, uint32_t{1} << 31, 28, 28});
  bytes.resize(bytes.size() + 784);
  std::ofstream(huge, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  error = test::error_of([&] { io::open_data(huge, options); });
  EXPECT_NE(error.find("huge-images-idx3-ubyte': the header counts 2147483648 items of 784 bytes"), std::string::npos)
      << error;

  std::string not_idx = temp_path("bad-images-idx3-ubyte");
  std::ofstream(not_idx) << "hello world, no IDX here";
  error = test::error_of([&] { io::open_data(not_idx, options); });
  EXPECT_NE(error.find("is not an IDX file"), std::string::npos) << error;

  error = test::error_of([&] { io::open_data(temp_path("missing.pt"), options); });
  EXPECT_NE(error.find("missing.pt' does not exist"), std::string::npos) << error;
  options.batch_size = 0;
  error = test::error_of([&] { io::open_data(truncated, options); });
  EXPECT_NE(error.find("batch size must be positive"), std::string::npos) << error;
}

TEST(DataSource, ImageFoldersResizeCropAndLabel) {
  fs::path root = temp_path("images");
  fs::remove_all(root);
  for (const char* cls : {"cat", "dog"}) fs::create_directories(root / cls);
  std::vector<unsigned char> red(40 * 20 * 3), blue(30 * 30 * 3);
  for (size_t i = 0; i < red.size(); i += 3) red[i] = 200;
  for (size_t i = 2; i < blue.size(); i += 3) blue[i] = 100;
  stbi_write_png((root / "cat" / "a.png").c_str(), 40, 20, 3, red.data(), 40 * 3);
  stbi_write_png((root / "dog" / "b.png").c_str(), 30, 30, 3, blue.data(), 30 * 3);
  io::DataOptions options;
  options.batch_size = 4;
  options.resize_size = 12;
  options.crop_size = 10;
  auto source = io::open_data(root.string(), options);
  EXPECT_EQ(source->num_classes(), 2);
  io::Batch batch = *source->next();
  at::Tensor x = batch.inputs[0].toTensor();
  EXPECT_EQ(x.sizes(), (std::vector<int64_t>{2, 3, 10, 10}));
  EXPECT_TRUE(batch.labels.equal(at::tensor({0, 1}, at::kLong)));
  EXPECT_NEAR(x[0][0].mean().item<double>(), 200.0 / 255.0, 1e-6);  // uniform colours survive resizing
  EXPECT_NEAR(x[1][2].mean().item<double>(), 100.0 / 255.0, 1e-6);
  EXPECT_EQ(x[0][1].abs().max().item<double>(), 0.0);

  std::ofstream(root / "dog" / "c.png") << "not a png";
  std::string error = test::error_of([&] { all_batches(*io::open_data(root.string(), options)); });
  EXPECT_NE(error.find("data item 2: cannot decode image '"), std::string::npos) << error;
  EXPECT_NE(error.find("c.png"), std::string::npos) << error;
}

/// The bytes of `path`.
std::vector<char> file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& path, const std::vector<char>& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// A folder `name` with one class holding one grey 16x16 image, `file` (PNG
/// or JPEG by its extension, written by stb_image_write); the image's path.
fs::path one_image_folder(const std::string& name, const std::string& file) {
  fs::path root = temp_path(name);
  fs::remove_all(root);
  fs::create_directories(root / "a");
  std::vector<unsigned char> pixels(16 * 16 * 3, 90);
  const fs::path image = root / "a" / file;
  if (image.extension() == ".png") {
    stbi_write_png(image.c_str(), 16, 16, 3, pixels.data(), 16 * 3);
  } else {
    stbi_write_jpg(image.c_str(), 16, 16, 3, pixels.data(), 90);
  }
  return image;
}

TEST(DataSource, PngChunksAreCheckedAgainstTheirCrc) {
  const fs::path png = one_image_folder("png_crc", "x.png");
  const std::string root = png.parent_path().parent_path().string();
  io::DataOptions options;
  options.resize_size = options.crop_size = 16;
  EXPECT_EQ(all_batches(*io::open_data(root, options)).size(), 1u) << "stb_image_write's CRCs hold";

  std::vector<char> bytes = file_bytes(png);
  const std::string text(bytes.begin(), bytes.end());
  const size_t idat = text.find("IDAT");
  ASSERT_NE(idat, std::string::npos);
  std::vector<char> flipped = bytes;
  flipped[idat + 6] ^= 0x01;  // one bit of the compressed pixels
  write_bytes(png, flipped);
  std::string error = test::error_of([&] { all_batches(*io::open_data(root, options)); });
  EXPECT_NE(error.find("data item 0: image '" + png.string() + "': PNG chunk IDAT at byte " + std::to_string(idat - 4) +
                       " fails its CRC check"),
            std::string::npos)
      << error;

  bytes.resize(idat + 20);  // cut inside the IDAT chunk
  write_bytes(png, bytes);
  error = test::error_of([&] { all_batches(*io::open_data(root, options)); });
  EXPECT_NE(error.find("PNG chunk IDAT at byte " + std::to_string(idat - 4) + " runs past the end of the file"),
            std::string::npos)
      << error;
}

TEST(DataSource, JpegHuffmanTablesAreCheckedBeforeDecoding) {
  const fs::path jpg = one_image_folder("jpeg_dht", "x.jpg");
  const std::string root = jpg.parent_path().parent_path().string();
  io::DataOptions options;
  options.resize_size = options.crop_size = 16;
  EXPECT_EQ(all_batches(*io::open_data(root, options)).size(), 1u) << "stb_image_write's tables hold";

  std::vector<char> bytes = file_bytes(jpg);
  const size_t dht = std::string(bytes.begin(), bytes.end()).find("\xFF\xC4");
  ASSERT_NE(dht, std::string::npos);
  const size_t counts = dht + 5;                                      // marker, length, table class and id
  bytes[counts + 14] = bytes[counts + 15] = static_cast<char>(0xFF);  // codes stb_image would write past its tables
  size_t declared = 0;
  for (size_t i = 0; i < 16; ++i) declared += static_cast<unsigned char>(bytes[counts + i]);
  write_bytes(jpg, bytes);
  std::string error = test::error_of([&] { all_batches(*io::open_data(root, options)); });
  EXPECT_NE(
      error.find("data item 0: image '" + jpg.string() + "': JPEG Huffman table at byte " + std::to_string(counts - 1) +
                 " declares " + std::to_string(declared) + " codes (at most 256): a corrupt file"),
      std::string::npos)
      << error;
}

TEST(DataSource, TensorFiles) {
  std::string path = temp_path("items.pt");
  io::save_value(at::arange(30, at::kFloat).reshape({10, 3}), path);
  io::DataOptions options;
  options.batch_size = 4;
  auto source = io::open_data(path, options);
  EXPECT_EQ(source->num_items(), 10);
  EXPECT_EQ(source->num_batches(), 3);
  std::vector<io::Batch> batches = all_batches(*source);
  EXPECT_EQ(batches[2].inputs[0].toTensor().size(0), 2);
  EXPECT_FALSE(batches[0].labels.defined());
}

TEST(OracleData, FashionMnistAsPythonReadsIt) {
  nlohmann::json record = test::fixture_json("fashion_mnist.json");
  io::DataOptions options;
  options.batch_size = 16;
  auto source = io::open_data(record["images"], options);
  EXPECT_EQ(source->num_items(), record["count"].get<int64_t>());
  io::Batch batch = *source->next();
  EXPECT_TRUE(batch.labels.equal(at::tensor(record["labels"].get<std::vector<int64_t>>(), at::kLong)));
  at::Tensor bytes = batch.inputs[0].toTensor().mul(255.0).round().to(at::kLong);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(bytes[i].sum().item<int64_t>(), record["pixel_sums"][i].get<int64_t>()) << "image " << i;
    EXPECT_TRUE(bytes[i].reshape(-1).slice(0, 0, 8).equal(
        at::tensor(record["first_pixels"][i].get<std::vector<int64_t>>(), at::kLong)));
  }
}

}  // namespace
}  // namespace qfx
