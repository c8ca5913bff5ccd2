#pragma once
// A pre-pass over pickle bytes for LibTorch's unpickler, which lacks the
// single-item opcodes APPEND and SETITEM that Python writes for one-element
// lists and dicts (`torch.save([x])`). Each becomes its batched form:
//
//   <list> <item> APPEND         =>  <list> MARK <item> APPENDS
//   <dict> <key> <value> SETITEM =>  <dict> MARK <key> <value> SETITEMS
//
// Finding where <item> (or <key>) starts needs the byte offset at which each
// value on the pickle stack began, so the pass simulates the stack; the same
// walk refuses sizes and stack pops the pickle cannot have.

#include <string>
#include <string_view>

namespace qfx::io::detail {

/// `pickle` with APPEND/SETITEM expanded; unchanged if it holds neither, or
/// an opcode the pass does not know (the unpickler then reports it).
/// c10::Error naming `what` and the byte offset, up to such an opcode, when
/// an opcode declares a size the pickle cannot have: a string or bytes longer
/// than what follows it, or a memo entry (LONG_BINPUT) past the pickle's
/// length (LibTorch's unpickler allocates either before it reads, so a few
/// corrupt bytes would ask for gigabytes); or when it pops more values than
/// the stack holds above its last MARK (LibTorch's unpickler does not check,
/// and corrupts its memory).
std::string expand_single_item_ops(std::string_view pickle, const std::string& what);

/// `pickle` with each `collections.OrderedDict()` a plain dict. LibTorch's
/// unpickler reads any OrderedDict as None (it expects one only in a tensor's
/// backward hooks) and has no POP, while torch.save of a module's state_dict
/// (PyTorch 2.3 and 2.4's `.pt2` archives) pickles an OrderedDict whose
/// `_metadata` a BUILD sets. The OrderedDict `()` REDUCE becomes EMPTY_DICT,
/// and the BUILD, with the bytes of its state (the `_metadata`, which no
/// reader uses), is dropped. Unchanged without an OrderedDict, or when a
/// memo entry the rewrite changes is read elsewhere.
std::string ordered_dicts_as_dicts(std::string_view pickle);

}  // namespace qfx::io::detail
