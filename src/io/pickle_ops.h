#pragma once
// The pickle opcodes torch.save writes (protocols 0-4 without frames), each a
// row: its argument layout and its stack effect; shared by the pre-passes of
// pickle_rewrite.h.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace qfx::io::detail::pickle {

enum class Arg { kNone, kFixed, kLine, kTwoLines, kLength1, kLength4, kLength8 };
enum class Effect {
  kPush,      // pushes a new value
  kNone,      // leaves the stack as it is (memo, proto)
  kPop,       // pops one
  kMark,      // pushes a mark
  kPopMark,   // pops to the mark
  kCollect,   // pops to the mark, pushes one value
  kReplace1,  // pops 1, pushes 1
  kReplace2,  // pops 2, pushes 1
  kReplace3,  // pops 3, pushes 1
  kAppend,    // APPEND
  kSetItem,   // SETITEM
  kStop,
};

struct OpRow {
  Arg arg;
  int size;  // kFixed: argument bytes
  Effect effect;
};

// A table, one row per line (not reflowed by clang-format).
// clang-format off
inline std::optional<OpRow> row(unsigned char op) {
  switch (op) {
    case '(': return OpRow{Arg::kNone, 0, Effect::kMark};
    case '.': return OpRow{Arg::kNone, 0, Effect::kStop};
    case '0': return OpRow{Arg::kNone, 0, Effect::kPop};
    case '1': return OpRow{Arg::kNone, 0, Effect::kPopMark};
    case 'F': case 'I': case 'L': case 'S': case 'V': case 'P': case 'g':
      return OpRow{Arg::kLine, 0, Effect::kPush};
    case 'G': return OpRow{Arg::kFixed, 8, Effect::kPush};
    case 'J': return OpRow{Arg::kFixed, 4, Effect::kPush};
    case 'K': case 'h': return OpRow{Arg::kFixed, 1, Effect::kPush};
    case 'M': return OpRow{Arg::kFixed, 2, Effect::kPush};
    case 'j': return OpRow{Arg::kFixed, 4, Effect::kPush};
    case 'N': case ']': case '}': case ')': case 0x88: case 0x89: case 0x8f:
      return OpRow{Arg::kNone, 0, Effect::kPush};
    case 'T': case 'X': case 'B': return OpRow{Arg::kLength4, 0, Effect::kPush};
    case 'U': case 'C': case 0x8c: return OpRow{Arg::kLength1, 0, Effect::kPush};
    case 0x8d: case 0x8e: return OpRow{Arg::kLength8, 0, Effect::kPush};
    case 0x8a: return OpRow{Arg::kLength1, 0, Effect::kPush};
    case 0x8b: return OpRow{Arg::kLength4, 0, Effect::kPush};
    case 'c': return OpRow{Arg::kTwoLines, 0, Effect::kPush};
    case 0x82: return OpRow{Arg::kFixed, 1, Effect::kPush};
    case 0x83: return OpRow{Arg::kFixed, 2, Effect::kPush};
    case 0x84: return OpRow{Arg::kFixed, 4, Effect::kPush};
    case 'p': return OpRow{Arg::kLine, 0, Effect::kNone};
    case 'q': return OpRow{Arg::kFixed, 1, Effect::kNone};
    case 'r': return OpRow{Arg::kFixed, 4, Effect::kNone};
    case 0x94: return OpRow{Arg::kNone, 0, Effect::kNone};
    case 0x80: return OpRow{Arg::kFixed, 1, Effect::kNone};
    case 'Q': case 0x85: return OpRow{Arg::kNone, 0, Effect::kReplace1};
    case 'R': case 'b': case 0x81: case 0x86: case 0x93: return OpRow{Arg::kNone, 0, Effect::kReplace2};
    case 0x87: case 0x92: return OpRow{Arg::kNone, 0, Effect::kReplace3};
    case 't': case 'l': case 'd': case 0x91: return OpRow{Arg::kNone, 0, Effect::kCollect};
    case 'e': case 'u': case 0x90: return OpRow{Arg::kNone, 0, Effect::kPopMark};
    case 'a': return OpRow{Arg::kNone, 0, Effect::kAppend};
    case 's': return OpRow{Arg::kNone, 0, Effect::kSetItem};
    default: return std::nullopt;  // DUP, INST, OBJ, FRAME, ...: not written by torch.save
  }
}
// clang-format on

inline uint64_t little_endian(std::string_view bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

// Bytes taken by an opcode's argument at `at`, or nullopt past the end.
inline std::optional<size_t> argument_size(std::string_view p, size_t at, const OpRow& r) {
  auto line_end = [&](size_t from) -> std::optional<size_t> {
    size_t nl = p.find('\n', from);
    return nl == std::string_view::npos ? std::nullopt : std::optional<size_t>(nl + 1 - at);
  };
  switch (r.arg) {
    case Arg::kNone: return 0;
    case Arg::kFixed: return static_cast<size_t>(r.size);
    case Arg::kLine: return line_end(at);
    case Arg::kTwoLines: {
      auto first = line_end(at);
      if (!first) return std::nullopt;
      size_t nl = p.find('\n', at + *first);
      return nl == std::string_view::npos ? std::nullopt : std::optional<size_t>(nl + 1 - at);
    }
    case Arg::kLength1:
    case Arg::kLength4:
    case Arg::kLength8: {
      int n = r.arg == Arg::kLength1 ? 1 : r.arg == Arg::kLength4 ? 4 : 8;
      if (at + n > p.size()) return std::nullopt;
      return n + std::min<uint64_t>(little_endian(p, at, n), p.size());  // past the end either way, no overflow
    }
  }
  return std::nullopt;
}

}  // namespace qfx::io::detail::pickle
