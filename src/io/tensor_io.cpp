// torch.save-compatible value files, and atomic file writes.

#include "qfx/io/tensor_io.h"

#include <c10/util/Exception.h>
#include <torch/serialize.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <unistd.h>

namespace qfx::io {

c10::IValue load_value(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TORCH_CHECK(in.good(), "cannot open '", path, "'");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return torch::pickle_load(bytes);
  } catch (const c10::Error& e) {
    std::string cause = e.what_without_backtrace();
    TORCH_CHECK(false, "cannot read '", path, "': expected a torch.save file of tensors, lists or tuples (",
                cause.substr(0, cause.find('\n')), ")");
  }
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    TORCH_CHECK(out.good(), "cannot write '", path, "'");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out.good()) {
      std::remove(tmp.c_str());
      TORCH_CHECK(false, "cannot write '", path, "'");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    TORCH_CHECK(false, "cannot write '", path, "'");
  }
}

void save_value(const c10::IValue& value, const std::string& path) {
  std::vector<char> bytes = torch::pickle_save(value);
  write_file_atomically(path, std::string(bytes.begin(), bytes.end()));
}

std::vector<c10::IValue> as_inputs(const c10::IValue& value, const std::string& what) {
  if (value.isTensor()) return {value};
  if (value.isList()) return value.toListRef().vec();
  if (value.isTuple()) return value.toTupleRef().elements().vec();
  TORCH_CHECK(false, what, " must hold a tensor or a list/tuple of tensors, not a ", value.tagKind());
}

}  // namespace qfx::io
