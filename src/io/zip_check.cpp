// The CRC-32 of every record of a zip archive (TorchScript and torch.save
// files) against its central directory: LibTorch's reader does not check
// them, so a flipped byte in a weight would load as if it were fine.

#include "zip_check.h"

#include <c10/util/Exception.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <istream>

namespace qfx::io::detail {
namespace {

constexpr uint32_t kEndOfDirectory = 0x06054b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr uint32_t kZip64End = 0x06064b50;
constexpr uint32_t kDirectoryEntry = 0x02014b50;
constexpr uint32_t kLocalHeader = 0x04034b50;

/// Little-endian reads inside the archive, each checked against its end.
/// `data` holds the archive's bytes from `origin` to its end (a tail of the
/// file when only its directory is read); offsets are the archive's.
class Bytes {
 public:
  Bytes(std::string_view data, const std::string& path, uint64_t origin = 0)
      : data_(data), path_(path), origin_(origin) {}

  uint64_t read(uint64_t at, int width) const {
    std::string_view bytes = slice(at, static_cast<uint64_t>(width));
    uint64_t value = 0;
    for (int i = width - 1; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[i]);
    return value;
  }
  std::string_view slice(uint64_t at, uint64_t size) const {
    TORCH_CHECK(at >= origin_ && at - origin_ <= data_.size() && size <= data_.size() - (at - origin_), "'", path_,
                "': not a valid zip archive (a record points past the end of the file)");
    return data_.substr(at - origin_, size);
  }
  uint64_t size() const { return origin_ + data_.size(); }

 private:
  std::string_view data_;
  const std::string& path_;
  uint64_t origin_;
};

struct Directory {
  uint64_t offset = 0;
  uint64_t entries = 0;
};

/// Where the central directory starts and how many entries it has (zip64
/// when the archive needs it).
Directory find_directory(const Bytes& zip, const std::string& path) {
  TORCH_CHECK(zip.size() >= 22, "'", path, "': not a zip archive (too short)");
  const uint64_t lowest = zip.size() > 22 + 65535 ? zip.size() - 22 - 65535 : 0;
  uint64_t end = zip.size() - 22;
  while (zip.read(end, 4) != kEndOfDirectory) {
    TORCH_CHECK(end > lowest, "'", path, "': not a zip archive (no end of central directory)");
    --end;
  }
  Directory d{zip.read(end + 16, 4), zip.read(end + 10, 2)};
  if (d.offset != 0xffffffffu && d.entries != 0xffffu) return d;
  TORCH_CHECK(end >= 20 && zip.read(end - 20, 4) == kZip64Locator, "'", path,
              "': not a valid zip archive (zip64 locator missing)");
  const uint64_t record = zip.read(end - 20 + 8, 8);
  TORCH_CHECK(zip.read(record, 4) == kZip64End, "'", path, "': not a valid zip archive (zip64 end record missing)");
  return {zip.read(record + 48, 8), zip.read(record + 32, 8)};
}

struct Entry {
  std::string name;
  uint32_t crc = 0;
  uint64_t size = 0;
  uint64_t local = 0;
  uint16_t method = 0;
  uint64_t next = 0;  ///< where the next directory entry starts
};

Entry read_entry(const Bytes& zip, uint64_t at, const std::string& path) {
  TORCH_CHECK(zip.read(at, 4) == kDirectoryEntry, "'", path, "': not a valid zip archive (bad central directory)");
  Entry e;
  e.method = static_cast<uint16_t>(zip.read(at + 10, 2));
  e.crc = static_cast<uint32_t>(zip.read(at + 16, 4));
  e.size = zip.read(at + 24, 4);
  const uint64_t name_length = zip.read(at + 28, 2), extra_length = zip.read(at + 30, 2);
  const uint64_t comment_length = zip.read(at + 32, 2);
  e.local = zip.read(at + 42, 4);
  e.name = std::string(zip.slice(at + 46, name_length));
  // Zip64: the 8-byte values a 0xffffffff field stands for, in field order.
  uint64_t extra = at + 46 + name_length;
  const uint64_t extra_end = extra + extra_length;
  while (extra + 4 <= extra_end) {
    const uint64_t id = zip.read(extra, 2), length = zip.read(extra + 2, 2);
    if (id == 0x0001) {
      uint64_t field = extra + 4;
      if (e.size == 0xffffffffu) e.size = zip.read(field, 8), field += 8;
      if (zip.read(at + 20, 4) == 0xffffffffu) field += 8;  // compressed size
      if (e.local == 0xffffffffu) e.local = zip.read(field, 8);
    }
    extra += 4 + length;
  }
  e.next = extra_end + comment_length;
  return e;
}

}  // namespace

std::vector<ZipRecord> zip_directory(std::istream& file, const std::string& path) {
  file.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(file.tellg());
  auto read_from = [&](uint64_t origin) {
    std::string bytes(size - origin, '\0');
    file.clear();
    file.seekg(static_cast<std::streamoff>(origin));
    file.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    TORCH_CHECK(file.gcount() == static_cast<std::streamsize>(bytes.size()), "cannot read '", path, "'");
    return bytes;
  };
  const uint64_t tail_origin = size > 22 + 65535 + 76 ? size - 22 - 65535 - 76 : 0;  // the end records, zip64's too
  const std::string tail = read_from(tail_origin);
  const Directory directory = find_directory(Bytes(tail, path, tail_origin), path);
  TORCH_CHECK(directory.offset <= size, "'", path, "': not a valid zip archive (bad central directory)");
  const std::string listing = read_from(directory.offset);
  Bytes zip(listing, path, directory.offset);
  std::vector<ZipRecord> records;
  for (uint64_t i = 0, at = directory.offset; i < directory.entries; ++i) {
    Entry e = read_entry(zip, at, path);
    at = e.next;
    records.push_back({e.name, e.size, e.method == 0, {}});
  }
  return records;
}

std::vector<ZipRecord> check_zip_crcs(std::string_view archive, const std::string& path) {
  Bytes zip(archive, path);
  Directory directory = find_directory(zip, path);
  std::vector<ZipRecord> records;
  uint64_t at = directory.offset;
  for (uint64_t i = 0; i < directory.entries; ++i) {
    Entry e = read_entry(zip, at, path);
    at = e.next;
    records.push_back({e.name, e.size, e.method == 0, {}});
    if (e.method != 0) continue;  // stored records only (LibTorch writes nothing else)
    TORCH_CHECK(zip.read(e.local, 4) == kLocalHeader, "'", path, "': not a valid zip archive (record '", e.name,
                "' has no header)");
    const uint64_t data = e.local + 30 + zip.read(e.local + 26, 2) + zip.read(e.local + 28, 2);
    std::string_view bytes = zip.slice(data, e.size);
    uLong crc = crc32(0L, Z_NULL, 0);
    for (uint64_t done = 0; done < bytes.size();) {  // zlib takes 32-bit lengths
      const auto n = static_cast<uInt>(std::min<uint64_t>(bytes.size() - done, 1u << 30));
      crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + done), n);
      done += n;
    }
    TORCH_CHECK(static_cast<uint32_t>(crc) == e.crc, "'", path, "': record '", e.name,
                "' is corrupt (its CRC-32 does not match the archive's directory)");
    records.back().data = bytes;
  }
  return records;
}

size_t BoundedMemoryAdapter::read(uint64_t pos, void* buf, size_t n, const char* /*what*/) const {
  if (pos >= bytes_.size()) return 0;
  const size_t available = std::min<size_t>(n, bytes_.size() - pos);
  std::memcpy(buf, bytes_.data() + pos, available);
  return available;
}

}  // namespace qfx::io::detail
