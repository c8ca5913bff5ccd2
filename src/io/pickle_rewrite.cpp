// Pickle stack simulation for expand_single_item_ops, over the opcode rows of
// pickle_ops.h (protocols 0-4 without frames; torch.save writes protocol 2).

#include "pickle_rewrite.h"

#include "pickle_ops.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

namespace qfx::io::detail {
namespace {

using pickle::Arg;
using pickle::argument_size;
using pickle::Effect;
using pickle::little_endian;
using pickle::OpRow;
using pickle::row;

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