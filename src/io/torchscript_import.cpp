// import_torchscript: loads the archive (errors name the file), then builds
// the GraphModule with the ScriptReader and lints it.

#include "qfx/io/torchscript_import.h"

#include "crash_guard.h"
#include "import/script_reader.h"
#include "qfx/io/memory_bounds.h"
#include "zip_check.h"

#include <torch/nn/module.h>
#include <torch/script.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string_view>

namespace qfx::io {

std::unique_ptr<ir::GraphModule> import_torchscript(const torch::jit::Module& module, const ImportOptions& options) {
  auto gm = std::make_unique<ir::GraphModule>();
  gm->root().train(module.is_training());
  std::string python_class = detail::python_class_name(module);
  gm->set_class_name(python_class.substr(python_class.rfind('.') + 1));
  detail::ScriptReader builder(*gm, options);
  builder.import_forward(module);
  for (const std::string& name : options.preserved_attributes) {
    TORCH_CHECK(module.hasattr(name), "preserved attribute '", name, "' is not an attribute of the model");
    gm->preserved_attributes()[name] = module.attr(name);
  }
  gm->lint();
  return gm;
}

namespace {

/// The first line of `text` with bytes that are not printable ASCII as '?',
/// at most 300 characters (a corrupt archive's code may be binary).
std::string printable_line(const std::string& text) {
  std::string line = text.substr(0, std::min(text.find('\n'), size_t{300}));
  for (char& ch : line) {
    if (ch < 0x20 || ch > 0x7e) ch = '?';
  }
  return line;
}

/// c10::Error naming `path` when the tensors of `module` (parameters,
/// buffers, tensor attributes; each storage once) need more bytes than the
/// archive's data records hold together, `held` (a truncated record).
void check_model_storages(const torch::jit::Module& module, const std::string& path, uint64_t held) {
  std::set<const void*> seen;
  uint64_t needed = 0;
  for (const auto& attribute : module.named_attributes(/*recurse=*/true)) {
    if (!attribute.value.isTensor()) continue;
    const at::Tensor& t = attribute.value.toTensor();
    if (!t.defined() || !t.has_storage() || !seen.insert(t.storage().data()).second) continue;
    needed += t.storage().nbytes();
  }
  TORCH_CHECK(needed <= held, "model '", path, "': its tensors need ", needed, " bytes, its data records hold ", held,
              " (a truncated or corrupt record)");
}

}  // namespace

torch::jit::Module load_script(const std::string& path) {
  TORCH_CHECK(std::ifstream(path).good(), "cannot open model file '", path, "'");
  TORCH_CHECK(!std::filesystem::is_directory(path), "cannot read model file '", path,
              "': it is a directory, not a TorchScript archive");
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  if (!error) check_fits_in_memory(2 * static_cast<uint64_t>(size), "loading model '" + path + "'");
  // Read once: the zip's records checked, then the model loaded from the same bytes.
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t data_bytes = 0;          // what the archive's tensor records hold
  if (bytes.rfind("PK", 0) == 0) {  // other files fail in load below
    for (const detail::ZipRecord& record : detail::check_zip_crcs(bytes, path)) {
      const std::string_view in_archive = std::string_view(record.name).substr(record.name.find('/') + 1);
      if (in_archive.rfind("data/", 0) == 0) data_bytes += record.size;  // data/0, data/1, ... (not data.pkl)
    }
  }
  auto load = [&] { return torch::jit::load(std::make_shared<detail::BoundedMemoryAdapter>(bytes)); };
  detail::check_load_does_not_crash(load, "'" + path + "'");
  torch::jit::Module module;
  try {
    module = load();
  } catch (const std::exception& e) {  // c10::Error, or a compile error of the archive's code
    const auto* error = dynamic_cast<const c10::Error*>(&e);
    TORCH_CHECK(false, "'", path, "' is not a TorchScript archive: ",
                printable_line(error != nullptr ? error->what_without_backtrace() : e.what()));
  }
  check_model_storages(module, path, data_bytes);
  return module;
}

std::unique_ptr<ir::GraphModule> import_torchscript(const std::string& path, const ImportOptions& options) {
  torch::jit::Module module = load_script(path);
  try {
    return import_torchscript(module, options);
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, path, ": ", e.what_without_backtrace());
  }
}

}  // namespace qfx::io
