// A model file's format from its bytes, and the reader for it.

#include "qfx/io/model_file.h"

#include "qfx/io/pt2_import.h"

#include "zip_check.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <vector>

namespace qfx::io {
namespace {

/// The first four bytes of a zip archive: a local file header.
constexpr char kZipMagic[] = {'P', 'K', 3, 4};

/// A record `name` at the archive's top or in its one top folder.
bool has_record(const std::vector<detail::ZipRecord>& records, const std::string& name) {
  return std::any_of(records.begin(), records.end(), [&](const detail::ZipRecord& record) {
    const std::string& n = record.name;
    size_t slash = n.find('/');
    return n == name || (slash != std::string::npos && n.compare(slash + 1, std::string::npos, name) == 0);
  });
}

}  // namespace

ModelFormat model_format(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TORCH_CHECK(in, "cannot open model file '", path, "'");
  char head[4] = {};
  in.read(head, sizeof(head));
  if (in.gcount() == 4 && std::equal(head, head + 4, kZipMagic)) {
    std::vector<detail::ZipRecord> records;
    try {
      in.clear();
      records = detail::zip_directory(in, path);
    } catch (const c10::Error&) {  // a damaged archive: the TorchScript reader says what is wrong
      return ModelFormat::kUnknown;
    }
    if (has_record(records, "archive_format")) return ModelFormat::kPt2;
    if (has_record(records, "serialized_exported_program.json")) return ModelFormat::kPt2Flat;
    return has_record(records, "constants.pkl") || has_record(records, "data.pkl") ? ModelFormat::kTorchScript
                                                                                   : ModelFormat::kUnknown;
  }
  // ModelProto's field 1 (ir_version, a varint) comes first in every ONNX file
  if (in.gcount() > 0 && head[0] == 0x08) return ModelFormat::kOnnx;
  return ModelFormat::kUnknown;
}

namespace {

/// The one-line error for a format qfx has no reader of.
void refuse_unreadable(const std::string& path, ModelFormat format) {
  TORCH_CHECK(format != ModelFormat::kOnnx, "'", path,
              "' is an ONNX model; qfx reads TorchScript archives (.pt) and torch.export archives (.pt2) (it writes "
              "ONNX)");
}

}  // namespace

void check_model_readable(const std::string& path) { refuse_unreadable(path, model_format(path)); }

std::unique_ptr<ir::GraphModule> load_model(const std::string& path, const ImportOptions& options) {
  ModelFormat format = model_format(path);
  refuse_unreadable(path, format);
  if (format == ModelFormat::kPt2 || format == ModelFormat::kPt2Flat) return import_pt2(path, options);
  return import_torchscript(path, options);
}

}  // namespace qfx::io
