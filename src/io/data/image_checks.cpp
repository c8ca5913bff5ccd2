// Image byte checks: PNG chunk CRCs, JPEG Huffman table sizes.

#include "image_checks.h"

#include <c10/util/Exception.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>

namespace qfx::io::detail {
namespace {

uint32_t big_endian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

/// Byte `at`, or 0 past the end (as stb_image reads a truncated file).
unsigned byte_at(const std::vector<unsigned char>& bytes, size_t at) { return at < bytes.size() ? bytes[at] : 0; }

size_t big_endian16(const std::vector<unsigned char>& bytes, size_t at) {
  return (byte_at(bytes, at) << 8) | byte_at(bytes, at + 1);
}

/// Markers without a length: TEM, RST0-7, SOI, EOI (0x00 is a stuffed 0xFF).
bool has_no_length(unsigned marker) { return marker == 0x00 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8); }

/// The DHT segment whose length field is at `at`: every table it holds (as
/// stb_image reads them, while length is left) has at most 256 codes.
void check_dht_segment(const std::vector<unsigned char>& bytes, size_t at, const std::string& what) {
  long left = static_cast<long>(big_endian16(bytes, at)) - 2;
  for (size_t table = at + 2; left > 0 && table < bytes.size();) {
    size_t codes = 0;
    for (size_t i = 0; i < 16; ++i) codes += byte_at(bytes, table + 1 + i);
    TORCH_CHECK(codes <= 256, what, ": JPEG Huffman table at byte ", table, " declares ", codes,
                " codes (at most 256): a corrupt file");
    left -= static_cast<long>(17 + codes);
    table += 17 + codes;
  }
}

}  // namespace

void check_png_crcs(const std::vector<unsigned char>& bytes, const std::string& what) {
  static const unsigned char kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() < 8 || !std::equal(kSignature, kSignature + 8, bytes.begin())) return;
  for (size_t at = 8; at + 8 <= bytes.size();) {
    const uint64_t length = big_endian32(&bytes[at]);
    std::string type(reinterpret_cast<const char*>(&bytes[at + 4]), 4);
    for (char& c : type) c = std::isalpha(static_cast<unsigned char>(c)) ? c : '?';
    TORCH_CHECK(at + 12 + length <= bytes.size(), what, ": PNG chunk ", type, " at byte ", at,
                " runs past the end of the file");
    const uint32_t crc = crc32(crc32(0, nullptr, 0), &bytes[at + 4], static_cast<uInt>(length + 4));
    TORCH_CHECK(crc == big_endian32(&bytes[at + 8 + length]), what, ": PNG chunk ", type, " at byte ", at,
                " fails its CRC check (a corrupt file)");
    if (type == "IEND") return;
    at += 12 + length;
  }
}

void check_jpeg_huffman_tables(const std::vector<unsigned char>& bytes, const std::string& what) {
  size_t at = 0;  // stb_image takes fill bytes before the start-of-image marker too
  while (at < bytes.size() && bytes[at] == 0xFF) ++at;
  if (at == 0 || at >= bytes.size() || bytes[at] != 0xD8) return;
  for (++at; at < bytes.size();) {
    if (bytes[at++] != 0xFF) continue;  // entropy-coded data, or bytes stb_image skips looking for a marker
    while (at < bytes.size() && bytes[at] == 0xFF) ++at;  // fill bytes
    if (at >= bytes.size()) return;
    const unsigned marker = bytes[at++];
    if (marker == 0xD9) return;  // end of image: stb_image reads no further
    if (has_no_length(marker)) continue;
    if (marker == 0xC4) check_dht_segment(bytes, at, what);
    at += std::max<size_t>(2, big_endian16(bytes, at));
  }
}

}  // namespace qfx::io::detail
