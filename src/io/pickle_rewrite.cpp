// Pickle stack simulation for expand_single_item_ops. Each opcode is a row:
// its argument layout and its stack effect. Protocols 0-4 without frames
// (torch.save writes protocol 2).

#include "pickle_rewrite.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

namespace qfx::io::detail {
namespace {

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
std::optional<OpRow> row(unsigned char op) {
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

uint64_t little_endian(std::string_view bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

// Bytes taken by an opcode's argument at `at`, or nullopt past the end.
std::optional<size_t> argument_size(std::string_view p, size_t at, const OpRow& r) {
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

struct Stack {
  std::vector<size_t> starts;  // byte offset where each value began; marks hold their offset too
  std::vector<bool> marks;

  void push(size_t start, bool mark = false) {
    starts.push_back(start);
    marks.push_back(mark);
  }
  /// Pops `n` values; false when the stack holds fewer above its last mark
  /// (LibTorch keeps marks apart from its stack, so there it would pop
  /// values below the mark, or past the stack's bottom).
  bool pop(size_t n, size_t* first_start) {
    if (starts.size() < n ||
        std::find(marks.end() - static_cast<std::ptrdiff_t>(n), marks.end(), true) != marks.end()) {
      return false;
    }
    drop(n, first_start);
    return true;
  }
  /// Pops the values above the last mark, and the mark.
  bool pop_to_mark(size_t* mark_start) {
    auto mark = std::find(marks.rbegin(), marks.rend(), true);
    if (mark == marks.rend()) return false;
    drop(static_cast<size_t>(mark - marks.rbegin()) + 1, mark_start);
    return true;
  }

 private:
  void drop(size_t n, size_t* first_start) {
    *first_start = starts[starts.size() - n];
    starts.resize(starts.size() - n);
    marks.resize(marks.size() - n);
  }
};

// Applies one opcode's stack effect; records MARK insertion points.
bool step(Stack& stack, Effect effect, size_t offset, std::vector<size_t>& inserts) {
  size_t start = 0;
  switch (effect) {
    case Effect::kPush: stack.push(offset); return true;
    case Effect::kNone:
    case Effect::kStop: return true;
    case Effect::kPop: return stack.pop(1, &start);
    case Effect::kMark: stack.push(offset, true); return true;
    case Effect::kPopMark: return stack.pop_to_mark(&start);
    case Effect::kCollect:
      if (!stack.pop_to_mark(&start)) return false;
      stack.push(start);
      return true;
    case Effect::kReplace1:
    case Effect::kReplace2:
    case Effect::kReplace3: {
      size_t n = effect == Effect::kReplace1 ? 1 : effect == Effect::kReplace2 ? 2 : 3;
      if (!stack.pop(n, &start)) return false;
      stack.push(start);
      return true;
    }
    case Effect::kAppend:
    case Effect::kSetItem: {
      if (!stack.pop(effect == Effect::kAppend ? 1 : 2, &start)) return false;
      inserts.push_back(start);
      return true;
    }
  }
  return false;
}

}  // namespace

std::string expand_single_item_ops(std::string_view pickle, const std::string& what) {
  Stack stack;
  std::vector<size_t> inserts;   // MARK positions
  std::vector<size_t> rewrites;  // APPEND/SETITEM positions
  size_t at = 0;
  while (at < pickle.size()) {
    const auto op = static_cast<unsigned char>(pickle[at]);
    auto r = row(op);
    if (!r) return std::string(pickle);
    auto size = argument_size(pickle, at + 1, *r);
    if (!size) return std::string(pickle);  // a truncated line or length: the unpickler reports it
    const size_t follow = pickle.size() - at - 1;
    TORCH_CHECK(*size <= follow, what, ": pickle opcode at byte ", at, " declares a string or bytes longer than the ",
                follow, " bytes that follow it (a corrupt file)");
    TORCH_CHECK(op != 'r' || little_endian(pickle, at + 1, 4) <= pickle.size(), what, ": pickle opcode at byte ", at,
                " stores memo entry ", little_endian(pickle, at + 1, 4), " of a ", pickle.size(),
                "-byte pickle (a corrupt file)");
    TORCH_CHECK(step(stack, r->effect, at, inserts), what, ": pickle opcode at byte ", at,
                " takes more values than the pickle's stack holds above its last MARK (a corrupt file)");
    if (r->effect == Effect::kAppend || r->effect == Effect::kSetItem) rewrites.push_back(at);
    at += 1 + *size;
    if (r->effect == Effect::kStop) break;
  }
  if (rewrites.empty()) return std::string(pickle);
  std::vector<size_t> sorted_inserts = inserts;
  std::sort(sorted_inserts.begin(), sorted_inserts.end());
  std::string out;
  out.reserve(pickle.size() + inserts.size());
  size_t next_insert = 0;
  for (size_t i = 0; i < pickle.size(); ++i) {
    while (next_insert < sorted_inserts.size() && sorted_inserts[next_insert] == i) {
      out += '(';
      ++next_insert;
    }
    char c = pickle[i];
    if (std::binary_search(rewrites.begin(), rewrites.end(), i)) c = c == 'a' ? 'e' : 'u';
    out += c;
  }
  return out;
}

}  // namespace qfx::io::detail
