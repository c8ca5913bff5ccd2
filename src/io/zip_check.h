#pragma once
// Integrity of zip archives (TorchScript and torch.save files). Internal to src/io.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qfx::io::detail {

/// A record of a zip archive, as its central directory lists it.
struct ZipRecord {
  std::string name;
  uint64_t size = 0;  ///< uncompressed bytes
};

/// The records of `archive` (the file's bytes). c10::Error "'<path>': record
/// '<name>' is corrupt ..." for the first stored record whose CRC-32 differs
/// from its central directory entry; also an error when the directory itself
/// is malformed. Zip64 archives included.
std::vector<ZipRecord> check_zip_crcs(std::string_view archive, const std::string& path);

}  // namespace qfx::io::detail
