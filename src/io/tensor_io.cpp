// torch.save-compatible value files.

#include "qfx/io/tensor_io.h"

#include "qfx/io/memory_bounds.h"
#include "pickle_rewrite.h"
#include "zip_check.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/unpickler.h>

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

// torch::pickle_load, with the pickle first passed through
// expand_single_item_ops (LibTorch's unpickler lacks APPEND and SETITEM).
c10::IValue unpickle_torch_save(const std::vector<char>& bytes, const std::string& what) {
  caffe2::serialize::PyTorchStreamReader archive(
      std::make_shared<detail::BoundedMemoryAdapter>(std::string_view(bytes.data(), bytes.size())));
  auto [data, size] = archive.getRecord("data.pkl");
  std::string pickle = detail::expand_single_item_ops(std::string_view(static_cast<const char*>(data.get()), size),
                                                      what + " (data.pkl)");
  size_t position = 0;
  auto read = [&](char* buffer, size_t n) {
    n = std::min(n, pickle.size() - position);
    std::memcpy(buffer, pickle.data() + position, n);
    position += n;
    return n;
  };
  std::map<const void*, size_t> record_sizes;  // a storage's data -> the bytes its record holds
  auto read_record = [&](const std::string& name) {
    auto [record, record_size] = archive.getRecord("data/" + name);
    record_sizes[record.get()] = record_size;
    return std::move(record);
  };
  torch::jit::Unpickler unpickler(read, nullptr, nullptr, read_record, c10::nullopt);
  c10::IValue value = unpickler.parse_ivalue();
  check_storages(value, what, [&](const c10::Storage& storage) -> std::optional<uint64_t> {
    auto it = record_sizes.find(storage.data());
    return it == record_sizes.end() ? std::nullopt : std::optional<uint64_t>(it->second);
  });
  return value;
}

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
    value = unpickle_torch_save(bytes, "'" + path + "'");
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
