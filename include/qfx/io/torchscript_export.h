#pragma once
/// \file
/// Export to TorchScript: a GraphModule (float, prepared, reference or
/// lowered) as a TorchScript archive that Python's `torch.jit.load` and C++'s
/// `torch::jit::load` run with the qfx interpreter's results. The archive's
/// root module holds every tensor, packed weight and qparam as an attribute;
/// its forward is the graph's code with each module call written out as the
/// ATen or `torch.ops.quantized` call it makes. Float `torch.nn` modules that
/// have parameters (Linear, Conv2d, BatchNorm2d, ...) stay submodules of
/// class `torch.nn.<Type>` with their parameters as parameters, so Python sees
/// `model.conv1.weight` and importing the file again gives back the module,
/// trainable (QAT after import). Every module has `training` (False: the
/// forward is the eval-mode one). Observers export as pass-through
/// (an exported prepared model computes the float outputs but does not
/// calibrate); fake-quantize modules as fake quantization with their current
/// qparams (what they compute with the observer off), LearnableFakeQuantize
/// not at all.
///
/// \code
///   qfx::convert_fx(*gm);
///   qfx::io::export_torchscript(*gm, "model_int8.pt");  // torch.jit.load("model_int8.pt")(x)
/// \endcode

#include "qfx/io/output_file.h"
#include "qfx/ir/graph_module.h"

#include <string>

namespace qfx::io {

/// The TorchScript source of the exported forward.
std::string torchscript_source(const ir::GraphModule& gm);

/// Writes the archive to `path` through write_output (qfx/io/output_file.h):
/// on error nothing is left at `path` and an existing file is untouched.
/// c10::Error names the node or module without a TorchScript form.
void export_torchscript(const ir::GraphModule& gm, const std::string& path, const OutputOptions& options = {});

}  // namespace qfx::io
