#pragma once
// Integrity of zip archives (TorchScript and torch.save files). Internal to src/io.

#include <string>
#include <string_view>

namespace qfx::io::detail {

/// c10::Error "'<path>': record '<name>' is corrupt ..." for the first stored
/// record of `archive` (the file's bytes) whose CRC-32 differs from its
/// central directory entry; also an error when the directory itself is
/// malformed. Zip64 archives included.
void check_zip_crcs(std::string_view archive, const std::string& path);

}  // namespace qfx::io::detail
