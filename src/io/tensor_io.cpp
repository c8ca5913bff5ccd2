// torch.save-compatible value files.

#include "qfx/io/tensor_io.h"

#include "qfx/io/memory_bounds.h"
#include "torch_save.h"
#include "zip_check.h"

#include <c10/util/Exception.h>
#include <torch/serialize.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>

namespace qfx::io {

namespace {

/// Throws: `path` is not a torch.save file qfx reads, because of `cause`.
void not_torch_save(const std::string& path, const std::string& cause) {
  TORCH_CHECK(false, "cannot read '", path, "': expected a torch.save file of tensors, lists or tuples (",
              cause.substr(0, cause.find('\n')), ")");
}

}  // namespace

c10::IValue load_value(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TORCH_CHECK(in.good(), "cannot open '", path, "'");
  TORCH_CHECK(!std::filesystem::is_directory(path), "cannot read '", path,
              "': it is a directory, not a torch.save file");
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  if (!error) check_fits_in_memory(2 * static_cast<uint64_t>(size), "reading '" + path + "'");  // file + tensors
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() >= 4 && bytes[0] == 'P' && bytes[1] == 'K') {  // a zip archive; other files fail below
    detail::check_zip_crcs(std::string_view(bytes.data(), bytes.size()), path);
  }
  c10::IValue value;
  try {
    value = detail::read_torch_save(std::string_view(bytes.data(), bytes.size()), "'" + path + "'");
  } catch (const c10::Error& e) {
    std::string cause = e.what_without_backtrace();
    if (cause.rfind("'" + path + "'", 0) == 0) throw;  // a short record, named already
    not_torch_save(path, cause);
  } catch (const std::exception& e) {  // LibTorch's unpickler indexes its memo table with at()
    not_torch_save(path, e.what());
  }
  return value;
}

void save_value(const c10::IValue& value, const std::string& path, const OutputOptions& options) {
  std::vector<char> bytes = torch::pickle_save(value);
  write_output(path, std::string_view(bytes.data(), bytes.size()), options);
}

std::vector<c10::IValue> as_inputs(const c10::IValue& value, const std::string& what) {
  if (value.isTensor()) return {value};
  if (value.isList()) return value.toListRef().vec();
  if (value.isTuple()) return value.toTupleRef().elements().vec();
  TORCH_CHECK(false, what, " must hold a tensor or a list/tuple of tensors, not a ", value.tagKind());
}

}  // namespace qfx::io
