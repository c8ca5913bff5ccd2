#pragma once
/// \file
/// The one door for models: a model file's format, told by its content (not
/// its name), and the file read by the importer of that format into an
/// FX-shaped GraphModule. Every command that takes a model calls
/// load_model, so that a new reader is one more case here.
///
/// \code
///   auto gm = qfx::io::load_model("resnet18.pt");
/// \endcode

#include "qfx/io/torchscript_import.h"

#include <memory>
#include <string>

namespace qfx::io {

/// What a model file holds.
enum class ModelFormat {
  kTorchScript,  ///< a `torch.jit.save` archive
  kPt2,          ///< a `torch.export.save` archive (PyTorch 2.8+: `archive_format`)
  kPt2Flat,      ///< the same, as PyTorch 2.3-2.7 wrote it (`serialized_exported_program.json`)
  kOnnx,         ///< an ONNX ModelProto
  kUnknown,      ///< anything else (the TorchScript reader says what is wrong)
};

/// The format of the file at `path`, from its bytes: a zip archive by the
/// records it holds, an ONNX model by its protobuf's first field.
/// c10::Error naming the file when it cannot be read.
ModelFormat model_format(const std::string& path);

/// c10::Error naming the file, what it is and what qfx reads when qfx has
/// no reader for its format (`.pt2`, ONNX); nothing for a TorchScript file
/// or one of no known format (whose reader says what is wrong).
void check_model_readable(const std::string& path);

/// The file at `path` as a GraphModule (check_model_readable first).
std::unique_ptr<ir::GraphModule> load_model(const std::string& path, const ImportOptions& options = {});

}  // namespace qfx::io
