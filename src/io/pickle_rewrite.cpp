// Pickle stack simulation for expand_single_item_ops. Each opcode is a row:
// its argument layout and its stack effect. Protocols 0-4 without frames
// (torch.save writes protocol 2).

#include "pickle_rewrite.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
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

/// What ordered_dicts_as_dicts tracks of a value on the pickle stack.
enum class Tag { kOther, kMark, kEmptyTuple, kOrderedDictClass, kOrderedDict };

struct TaggedValue {
  Tag tag;
  size_t start;  // byte offset of the opcode that began the value
};

/// Pops `n` values above the last mark into `popped` (bottom first); false when fewer are there.
bool pop_values(std::vector<TaggedValue>& stack, size_t n, std::vector<TaggedValue>& popped) {
  if (stack.size() < n) return false;
  auto first = stack.end() - static_cast<std::ptrdiff_t>(n);
  if (std::any_of(first, stack.end(), [](const TaggedValue& v) { return v.tag == Tag::kMark; })) return false;
  popped.assign(first, stack.end());
  stack.erase(first, stack.end());
  return true;
}

/// Pops to the last mark; the mark's offset, or nullopt without one.
std::optional<size_t> pop_to_mark(std::vector<TaggedValue>& stack) {
  auto mark = std::find_if(stack.rbegin(), stack.rend(), [](const TaggedValue& v) { return v.tag == Tag::kMark; });
  if (mark == stack.rend()) return std::nullopt;
  size_t start = mark->start;
  stack.resize(static_cast<size_t>(stack.rend() - mark) - 1);
  return start;
}

/// The memo index a PUT/GET opcode at `at` names.
uint64_t memo_index(std::string_view p, size_t at, unsigned char op) {
  if (op == 'p' || op == 'g') return std::strtoull(std::string(p.substr(at + 1, 20)).c_str(), nullptr, 10);
  return little_endian(p, at + 1, op == 'q' || op == 'h' ? 1 : 4);
}

/// One edit: bytes [from, to) become `with`.
struct Edit {
  size_t from, to;
  std::string with;
};

/// Applies one opcode to the tagged stack, recording edits; false when the
/// pickle is not one the pass can follow.
struct OrderedDictPass {
  std::string_view pickle;
  std::vector<TaggedValue> stack;
  std::map<uint64_t, Tag> memo_tags;
  std::map<uint64_t, size_t> memo_defs;                // index -> offset of its PUT
  std::vector<std::pair<size_t, uint64_t>> memo_gets;  // offset, index
  std::vector<Edit> edits, deletions;
  std::vector<size_t> moved_classes;  // offsets of the GLOBALs an edit removed

  /// The end of the GLOBAL at `at` with the memo PUT that follows it, if any.
  size_t class_definition_end(size_t at) const {
    size_t end = at + 1 + std::string_view("collections\nOrderedDict\n").size();
    if (end < pickle.size() && pickle[end] == 'q') return end + 2;
    if (end < pickle.size() && pickle[end] == 'r') return end + 5;
    return end;
  }

  /// The removed GLOBAL and PUT, written where their memo entry is first
  /// read (a tensor's `OrderedDict()` backward hooks read it): the same
  /// entry, defined later. False when it is read in a form the pass does not move.
  bool move_class_definitions() {
    for (size_t global : moved_classes) {
      size_t end = class_definition_end(global);
      if (end == global + 1 + std::string_view("collections\nOrderedDict\n").size()) continue;  // not memoized
      uint64_t index = memo_index(pickle, end - (pickle[end - 2] == 'q' ? 2 : 5), pickle[end - 2] == 'q' ? 'q' : 'r');
      for (const auto& [at, read] : memo_gets) {
        if (read != index || at < end || deleted(at)) continue;
        if (pickle[at] != 'h' && pickle[at] != 'j') return false;
        edits.push_back({at, at + (pickle[at] == 'h' ? 2u : 5u), std::string(pickle.substr(global, end - global))});
        break;
      }
    }
    return true;
  }

  bool step(size_t at, unsigned char op, size_t size, Effect effect) {
    constexpr std::string_view kClass = "collections\nOrderedDict\n";
    std::vector<TaggedValue> popped;
    if (op == 'c') {
      stack.push_back({pickle.substr(at + 1, size) == kClass ? Tag::kOrderedDictClass : Tag::kOther, at});
    } else if (op == ')') {
      stack.push_back({Tag::kEmptyTuple, at});
    } else if (op == 'p' || op == 'q' || op == 'r' || op == 0x94) {
      if (stack.empty()) return false;
      uint64_t index = op == 0x94 ? memo_defs.size() : memo_index(pickle, at, op);
      memo_tags[index] = stack.back().tag;
      memo_defs[index] = at;
    } else if (op == 'g' || op == 'h' || op == 'j') {
      uint64_t index = memo_index(pickle, at, op);
      memo_gets.emplace_back(at, index);
      stack.push_back({memo_tags.count(index) != 0 ? memo_tags[index] : Tag::kOther, at});
    } else if (op == 'R') {  // the OrderedDict() a GLOBAL (and its memo) made -> EMPTY_DICT
      if (!pop_values(stack, 2, popped)) return false;
      bool empty_call = popped[0].tag == Tag::kOrderedDictClass && pickle[popped[0].start] == 'c' &&
                        popped[1].tag == Tag::kEmptyTuple && popped[1].start + 1 == at &&
                        popped[1].start == class_definition_end(popped[0].start);
      if (empty_call) {
        edits.push_back({popped[0].start, at + 1, "}"});
        moved_classes.push_back(popped[0].start);
      }
      stack.push_back({empty_call ? Tag::kOrderedDict : Tag::kOther, popped[0].start});
    } else if (op == 'b') {  // BUILD of such a dict's state (its _metadata): state and BUILD dropped
      if (!pop_values(stack, 2, popped)) return false;
      if (popped[0].tag == Tag::kOrderedDict) deletions.push_back({popped[1].start, at + 1, ""});
      stack.push_back(popped[0]);
    } else {
      return generic(at, effect, popped);
    }
    return true;
  }

  bool generic(size_t at, Effect effect, std::vector<TaggedValue>& popped) {
    switch (effect) {
      case Effect::kPush: stack.push_back({Tag::kOther, at}); return true;
      case Effect::kNone:
      case Effect::kStop: return true;
      case Effect::kPop: return pop_values(stack, 1, popped);
      case Effect::kMark: stack.push_back({Tag::kMark, at}); return true;
      case Effect::kPopMark: return pop_to_mark(stack).has_value();
      case Effect::kCollect: {
        std::optional<size_t> start = pop_to_mark(stack);
        if (start) stack.push_back({Tag::kOther, *start});
        return start.has_value();
      }
      case Effect::kReplace1:
      case Effect::kReplace2:
      case Effect::kReplace3: {
        size_t n = effect == Effect::kReplace1 ? 1 : effect == Effect::kReplace2 ? 2 : 3;
        if (!pop_values(stack, n, popped)) return false;
        stack.push_back({Tag::kOther, popped[0].start});
        return true;
      }
      case Effect::kAppend: return pop_values(stack, 1, popped);
      case Effect::kSetItem: return pop_values(stack, 2, popped);
    }
    return false;
  }

  bool deleted(size_t offset) const {
    return std::any_of(deletions.begin(), deletions.end(),
                       [&](const Edit& d) { return offset >= d.from && offset < d.to; });
  }

  /// True when no memo entry the edits change or delete is read where the pickle stays.
  bool memo_safe() const {
    for (const auto& [at, index] : memo_gets) {
      if (deleted(at)) continue;
      auto def = memo_defs.find(index);
      if (def == memo_defs.end()) continue;
      if (deleted(def->second)) return false;
    }
    return true;
  }
};

}  // namespace

std::string ordered_dicts_as_dicts(std::string_view pickle) {
  if (pickle.find("collections\nOrderedDict\n") == std::string_view::npos) return std::string(pickle);
  OrderedDictPass pass{pickle};
  for (size_t at = 0; at < pickle.size();) {
    const auto op = static_cast<unsigned char>(pickle[at]);
    auto r = row(op);
    auto size = r ? argument_size(pickle, at + 1, *r) : std::nullopt;
    if (!size || at + 1 + *size > pickle.size() || !pass.step(at, op, *size, r->effect)) return std::string(pickle);
    if (r->effect == Effect::kStop) break;
    at += 1 + *size;
  }
  if (pass.edits.empty() || !pass.memo_safe() || !pass.move_class_definitions()) return std::string(pickle);
  std::vector<Edit> all = pass.deletions;
  for (const Edit& e : pass.edits) {
    if (!pass.deleted(e.from)) all.push_back(e);
  }
  std::sort(all.begin(), all.end(), [](const Edit& a, const Edit& b) { return a.from < b.from; });
  std::string out;
  size_t copied = 0;
  for (const Edit& e : all) {
    if (e.from < copied) continue;  // inside an earlier deletion
    out.append(pickle.substr(copied, e.from - copied));
    out += e.with;
    copied = e.to;
  }
  out.append(pickle.substr(copied));
  return out;
}

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
