// import_pt2: reads the archive, then builds the GraphModule from its
// exported program and lints it.

#include "qfx/io/pt2_import.h"

#include "pt2/archive.h"
#include "pt2/program_reader.h"

#include <torch/nn/module.h>

namespace qfx::io {

std::unique_ptr<ir::GraphModule> import_pt2(const std::string& path, const ImportOptions& options) {
  TORCH_CHECK(options.script_module_names.empty() && options.script_module_classes.empty() &&
                  options.nested_module_names.empty() && options.nested_module_classes.empty() &&
                  options.preserved_attributes.empty(),
              "'", path,
              "': a .pt2 program has no modules to keep whole and no attributes besides its tensors: "
              "PrepareCustomConfig's non-traceable and standalone modules and preserved attributes apply to "
              "TorchScript models");
  pt2::Archive archive = pt2::read_archive(path);
  auto gm = std::make_unique<ir::GraphModule>();
  gm->root().train(false);
  pt2::read_program(archive, *gm);
  gm->lint();
  return gm;
}

}  // namespace qfx::io
