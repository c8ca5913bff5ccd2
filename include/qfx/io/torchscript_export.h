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

#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>

#include <string>
#include <vector>

namespace qfx::io {

/// The TorchScript source of the exported forward.
std::string torchscript_source(const ir::GraphModule& gm);

/// The exported model failed when it ran on example inputs: node() is the
/// graph node whose statement failed (empty when the traceback names none),
/// what() says so with LibTorch's message.
class ExportedRunError : public c10::Error {
 public:
  ExportedRunError(std::string node, std::string kernel_limit, const std::string& message);
  const std::string& node() const { return node_; }
  /// When the failure is a limit of a LibTorch kernel qfx knows (a shape it
  /// cannot run), what it is; empty otherwise.
  const std::string& kernel_limit() const { return kernel_limit_; }

 private:
  std::string node_, kernel_limit_;
};

/// How export_torchscript writes and checks the archive.
struct TorchScriptOptions {
  /// When not empty, the archive is first loaded back by torch::jit::load and
  /// run once on these inputs (a calibration batch), as the deploying host
  /// will: a failure raises ExportedRunError naming the node, and nothing is
  /// written.
  std::vector<c10::IValue> check_inputs;
  /// On the onednn engine, pointwise convolutions as quantized::linear over
  /// their channels (nn::pointwise_linear_weight): the file then runs under
  /// any sequence of thread counts and batch sizes. False keeps LibTorch's
  /// convolution, a little faster on its first call's shape and thread count
  /// and failing on others (docs/divergences.md).
  bool pointwise_convs_as_linear = true;
};

/// Writes the archive to `path` through write_output (qfx/io/output_file.h):
/// on error nothing is left at `path` and an existing file is untouched.
/// c10::Error names the node or module without a TorchScript form.
/// \code
///   qfx::io::TorchScriptOptions check;
///   check.check_inputs = {calibration_batch};
///   qfx::io::export_torchscript(*gm, "model_int8.pt", {}, check);
/// \endcode
void export_torchscript(const ir::GraphModule& gm, const std::string& path, const OutputOptions& options = {},
                        const TorchScriptOptions& script = {});

}  // namespace qfx::io
