// A model file's format from its bytes, and the reader for it.

#include "qfx/io/model_file.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <vector>

namespace qfx::io {
namespace {

constexpr uint32_t kZipLocalHeader = 0x04034b50, kZipEndOfDirectory = 0x06054b50, kZipDirectoryEntry = 0x02014b50;
constexpr size_t kEndOfDirectorySize = 22, kMaxZipComment = 0xffff, kDirectoryEntrySize = 46;

uint32_t le32(const std::vector<char>& b, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(b[at + i])) << (8 * i);
  return v;
}

uint16_t le16(const std::vector<char>& b, size_t at) {
  return static_cast<uint16_t>(static_cast<unsigned char>(b[at]) | static_cast<unsigned char>(b[at + 1]) << 8);
}

std::vector<char> read_range(std::ifstream& in, uint64_t offset, uint64_t size) {
  std::vector<char> bytes(size);
  in.clear();  // after a read that reached the end
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  bytes.resize(static_cast<size_t>(in.gcount()));
  return bytes;
}

/// The record names of a zip archive, from its central directory (empty when
/// it cannot be found, as in a truncated file or a zip64 archive).
std::vector<std::string> zip_names(std::ifstream& in, uint64_t file_size) {
  uint64_t tail_size = std::min<uint64_t>(file_size, kEndOfDirectorySize + kMaxZipComment);
  std::vector<char> tail = read_range(in, file_size - tail_size, tail_size);
  if (tail.size() < kEndOfDirectorySize) return {};
  size_t end = tail.size() - kEndOfDirectorySize;  // the last record, after which only its comment
  while (le32(tail, end) != kZipEndOfDirectory) {
    if (end == 0) return {};
    --end;
  }
  uint32_t directory_size = le32(tail, end + 12), directory_offset = le32(tail, end + 16);
  if (directory_offset == 0xffffffff || uint64_t{directory_offset} + directory_size > file_size) return {};
  std::vector<char> directory = read_range(in, directory_offset, directory_size);
  std::vector<std::string> names;
  for (size_t at = 0; at + kDirectoryEntrySize <= directory.size() && le32(directory, at) == kZipDirectoryEntry;) {
    size_t name_size = le16(directory, at + 28), extra = le16(directory, at + 30), comment = le16(directory, at + 32);
    if (at + kDirectoryEntrySize + name_size > directory.size()) break;
    names.emplace_back(directory.data() + at + kDirectoryEntrySize, name_size);
    at += kDirectoryEntrySize + name_size + extra + comment;
  }
  return names;
}

/// A record `name` at the archive's top or in its one top folder.
bool has_record(const std::vector<std::string>& names, const std::string& name) {
  return std::any_of(names.begin(), names.end(), [&](const std::string& n) {
    size_t slash = n.find('/');
    return n == name || (slash != std::string::npos && n.compare(slash + 1, std::string::npos, name) == 0);
  });
}

}  // namespace

ModelFormat model_format(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  TORCH_CHECK(in, "cannot open model file '", path, "'");
  std::streamoff end = in.tellg();
  if (end < 0) return ModelFormat::kUnknown;  // not a regular file (a folder): the TorchScript reader says so
  auto size = static_cast<uint64_t>(end);
  std::vector<char> head = read_range(in, 0, std::min<uint64_t>(size, 4));
  if (head.size() == 4 && le32(head, 0) == kZipLocalHeader) {
    std::vector<std::string> names = zip_names(in, size);
    if (has_record(names, "archive_format")) return ModelFormat::kPt2;
    if (has_record(names, "serialized_exported_program.json")) return ModelFormat::kPt2Flat;
    return has_record(names, "constants.pkl") || has_record(names, "data.pkl") ? ModelFormat::kTorchScript
                                                                               : ModelFormat::kUnknown;
  }
  // ModelProto's field 1 (ir_version, a varint) comes first in every ONNX file
  if (!head.empty() && head[0] == 0x08) return ModelFormat::kOnnx;
  return ModelFormat::kUnknown;
}

std::unique_ptr<ir::GraphModule> load_model(const std::string& path, const ImportOptions& options) {
  switch (model_format(path)) {
    case ModelFormat::kPt2:
    case ModelFormat::kPt2Flat:
      TORCH_CHECK(false, "'", path, "' is a torch.export archive (.pt2); qfx reads TorchScript archives (.pt) only: ",
                  "save the model with torch.jit.trace");
    case ModelFormat::kOnnx:
      TORCH_CHECK(false, "'", path, "' is an ONNX model; qfx reads TorchScript archives (.pt) only (it writes ONNX)");
    default: return import_torchscript(path, options);
  }
}

}  // namespace qfx::io
