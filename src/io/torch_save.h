#pragma once
// torch.save files in memory: LibTorch's unpickler, with the pickle first
// passed through expand_single_item_ops and parameters read as their
// tensors. Internal to src/io (tensor_io.cpp, the .pt2 reader's flat layout).

#include <ATen/core/ivalue.h>

#include <string>
#include <string_view>

namespace qfx::io::detail {

/// The value a torch.save archive (`bytes`, named `what` in errors) holds.
/// An nn.Parameter (`torch._utils._rebuild_parameter`, with or without its
/// state) is read as its tensor. c10::Error naming `what` for a record
/// shorter than its storage; LibTorch's own errors for what it cannot read.
c10::IValue read_torch_save(std::string_view bytes, const std::string& what);

}  // namespace qfx::io::detail
