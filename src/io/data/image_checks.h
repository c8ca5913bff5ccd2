#pragma once
// Checks on image bytes before stb_image decodes them: what stb_image does
// not check itself, or checks only after writing past a table.

#include <cstdint>
#include <string>
#include <vector>

namespace qfx::io::detail {

/// c10::Error naming the chunk when a PNG chunk's CRC-32 does not match its
/// type and data, or a chunk runs past the file (stb_image checks neither).
/// Files without PNG's signature are left alone.
void check_png_crcs(const std::vector<unsigned char>& bytes, const std::string& what);

/// c10::Error naming the segment when a JPEG Huffman table (a DHT segment)
/// declares more than 256 codes: stb_image would write them past its
/// 256-entry tables. Markers are found as stb_image finds them: segments
/// with a length are skipped by it, every other 0xFF byte starts a marker,
/// up to the end-of-image marker. Files without JPEG's start-of-image marker
/// (after any 0xFF fill bytes) are left alone.
void check_jpeg_huffman_tables(const std::vector<unsigned char>& bytes, const std::string& what);

}  // namespace qfx::io::detail
