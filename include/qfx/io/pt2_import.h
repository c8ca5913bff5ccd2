#pragma once
/// \file
/// `.pt2` import: a program saved with `torch.export.save(ep, "model.pt2")`
/// becomes the GraphModule `torch.fx.symbolic_trace` makes from the Python
/// model, the same one the TorchScript reader makes from its trace:
///
/// - the nodes one call of a `torch.nn` module made (their
///   `nn_module_stack`) become one `call_module` of that module, built from
///   its parameters and buffers and its ATen ops' arguments
///   (`torch.ops.aten.conv2d.default(x, w, b, [2, 2])` -> `Conv2d(stride=2)`);
///   a module qfx has no form of is read as its ATen ops;
/// - the other ATen ops become FX nodes through the ATen -> FX table
///   (`aten.add.Tensor` -> `operator.add`, `aten.flatten.using_ints` ->
///   `torch.flatten`), dynamic sizes as `x.size(d)`;
/// - parameters, buffers and constants read outside a module become
///   `get_attr` nodes on their names.
///
/// What cannot be read (an op without a mapping, an unknown schema major
/// version, a damaged archive) raises c10::Error naming the archive, and the
/// record or the node.

#include "qfx/io/torchscript_import.h"

#include <memory>
#include <string>

namespace qfx::io {

/// Imports the PT2 archive at `path` (PyTorch 2.8+ layout).
///
/// \code
///   auto gm = qfx::io::import_pt2("resnet18.pt2");
///   std::cout << gm->code();
/// \endcode
std::unique_ptr<ir::GraphModule> import_pt2(const std::string& path, const ImportOptions& options = {});

}  // namespace qfx::io
