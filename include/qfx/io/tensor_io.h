#pragma once
/// \file
/// Reading and writing values in the format of Python's `torch.save` /
/// `torch.load`, so that inputs and outputs move between Python and qfx.

#include "qfx/io/output_file.h"

#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

namespace qfx::io {

/// Reads a file written by Python's `torch.save` (a tensor, or lists and
/// tuples of tensors and numbers). Raises c10::Error naming the file when it
/// is missing or unreadable.
c10::IValue load_value(const std::string& path);

/// Writes `value` so that Python's `torch.load` reads it, through
/// write_output (qfx/io/output_file.h): the file appears whole or not at all.
void save_value(const c10::IValue& value, const std::string& path, const OutputOptions& options = {});

/// The positional inputs a loaded value stands for: a tensor is one input, a
/// list or tuple is one input per item. Raises c10::Error otherwise.
std::vector<c10::IValue> as_inputs(const c10::IValue& value, const std::string& what);

}  // namespace qfx::io
