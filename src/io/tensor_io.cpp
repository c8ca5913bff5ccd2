// torch.save-compatible value files.

#include "qfx/io/tensor_io.h"

#include "pickle_rewrite.h"

#include <caffe2/serialize/in_memory_adapter.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/unpickler.h>

#include <c10/util/Exception.h>
#include <torch/serialize.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

namespace qfx::io {

namespace {

// torch::pickle_load, with the pickle first passed through
// expand_single_item_ops (LibTorch's unpickler lacks APPEND and SETITEM).
c10::IValue unpickle_torch_save(const std::vector<char>& bytes) {
  caffe2::serialize::PyTorchStreamReader archive(
      std::make_shared<caffe2::serialize::MemoryReadAdapter>(bytes.data(), static_cast<off_t>(bytes.size())));
  auto [data, size] = archive.getRecord("data.pkl");
  std::string pickle = detail::expand_single_item_ops(std::string_view(static_cast<const char*>(data.get()), size));
  size_t position = 0;
  auto read = [&](char* buffer, size_t n) {
    n = std::min(n, pickle.size() - position);
    std::memcpy(buffer, pickle.data() + position, n);
    position += n;
    return n;
  };
  auto read_record = [&](const std::string& name) { return std::get<0>(archive.getRecord("data/" + name)); };
  torch::jit::Unpickler unpickler(read, nullptr, nullptr, read_record, c10::nullopt);
  return unpickler.parse_ivalue();
}

}  // namespace

c10::IValue load_value(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TORCH_CHECK(in.good(), "cannot open '", path, "'");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return unpickle_torch_save(bytes);
  } catch (const c10::Error& e) {
    std::string cause = e.what_without_backtrace();
    TORCH_CHECK(false, "cannot read '", path, "': expected a torch.save file of tensors, lists or tuples (",
                cause.substr(0, cause.find('\n')), ")");
  }
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
