// ordered_dicts_as_dicts (pickle_rewrite.h): a torch.save pickle's
// `collections.OrderedDict()` as a plain dict, the BUILD of its `_metadata`
// dropped, the stack simulated with a tag per value.

#include "pickle_ops.h"
#include "pickle_rewrite.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <vector>

namespace qfx::io::detail {
namespace {

using pickle::argument_size;
using pickle::Effect;
using pickle::little_endian;
using pickle::row;

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

}  // namespace qfx::io::detail
