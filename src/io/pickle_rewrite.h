#pragma once
// A pre-pass over pickle bytes for LibTorch's unpickler, which lacks the
// single-item opcodes APPEND and SETITEM that Python writes for one-element
// lists and dicts (`torch.save([x])`). Each becomes its batched form:
//
//   <list> <item> APPEND         =>  <list> MARK <item> APPENDS
//   <dict> <key> <value> SETITEM =>  <dict> MARK <key> <value> SETITEMS
//
// Finding where <item> (or <key>) starts needs the byte offset at which each
// value on the pickle stack began, so the pass simulates the stack.

#include <string>
#include <string_view>

namespace qfx::io::detail {

/// `pickle` with APPEND/SETITEM expanded; unchanged if it holds neither, or
/// an opcode the pass does not know (the unpickler then reports it).
std::string expand_single_item_ops(std::string_view pickle);

}  // namespace qfx::io::detail
