#pragma once
// Zip archives (TorchScript, torch.save and torch.export files): their directory, and the integrity of
// their records. Internal to src/io.

#include <caffe2/serialize/read_adapter_interface.h>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace qfx::io::detail {

/// A record of a zip archive, as its central directory lists it.
struct ZipRecord {
  std::string name;
  uint64_t size = 0;  ///< uncompressed bytes
  bool stored = true;     ///< not compressed
  std::string_view data;  ///< a stored record's bytes (check_zip_crcs only)
};

/// The records of `archive` (the file's bytes), each stored one with its bytes. c10::Error "'<path>': record
/// '<name>' is corrupt ..." for the first stored record whose CRC-32 differs
/// from its central directory entry; also an error when the directory itself
/// is malformed. Zip64 archives included.
std::vector<ZipRecord> check_zip_crcs(std::string_view archive, const std::string& path);

/// The records of the zip archive `file` (named `path` in errors), from its
/// central directory alone: the file's tail is read, not the whole file.
/// c10::Error when it is not a valid zip archive. Zip64 archives included.
std::vector<ZipRecord> zip_directory(std::istream& file, const std::string& path);

/// An archive's bytes in memory for PyTorchStreamReader. Unlike LibTorch's
/// MemoryReadAdapter, a read past the end gives the bytes there are (none
/// past the end), as its FileAdapter does: the zip reader probes a foreign
/// or damaged file at positions outside it.
class BoundedMemoryAdapter final : public caffe2::serialize::ReadAdapterInterface {
 public:
  explicit BoundedMemoryAdapter(std::string_view bytes) : bytes_(bytes) {}
  size_t size() const override { return bytes_.size(); }
  size_t read(uint64_t pos, void* buf, size_t n, const char* what = "") const override;

 private:
  std::string_view bytes_;
};

}  // namespace qfx::io::detail
