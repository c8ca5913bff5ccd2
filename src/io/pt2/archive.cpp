// read_archive: the PT2 archive's records through PyTorchStreamReader (one
// root folder, stored records), the exported program's JSON, and each tensor
// from its raw storage record and its metadata (sizes, strides, offset).

#include "archive.h"

#include "io/zip_check.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/types.h>

#include <fstream>

namespace qfx::io::pt2 {

void fail(const std::string& path, const std::string& what) { TORCH_CHECK(false, "cannot read '", path, "': ", what); }

namespace {

std::string record_text(caffe2::serialize::PyTorchStreamReader& reader, const std::string& path,
                        const std::string& name) {
  if (!reader.hasRecord(name)) fail(path, "record '" + name + "' is missing");
  auto [data, size] = reader.getRecord(name);
  return std::string(static_cast<const char*>(data.get()), size);
}

nlohmann::json record_json(caffe2::serialize::PyTorchStreamReader& reader, const std::string& path,
                           const std::string& name) {
  return parse_program_json(record_text(reader, path, name), path, name);
}

/// `text` with Python's non-finite float literals outside strings as null.
std::string without_python_literals(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      if (c == '"') in_string = false;
      continue;
    }
    in_string = c == '"';
    bool replaced = false;
    for (std::string_view literal : {"-Infinity", "Infinity", "NaN"}) {
      if (text.compare(i, literal.size(), literal) == 0) {
        out += "null";
        i += literal.size() - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

int64_t sym_int(const nlohmann::json& value, const std::string& where) {
  if (!value.is_object() || !value.contains("as_int") || !value["as_int"].is_number_integer()) {
    TORCH_CHECK(false, where, " is symbolic or malformed (", value.dump().substr(0, 80), ")");
  }
  return value["as_int"].get<int64_t>();
}

std::vector<int64_t> sym_ints(const nlohmann::json& values, const std::string& where) {
  TORCH_CHECK(values.is_array(), where, " is not a list");
  std::vector<int64_t> out;
  for (const auto& v : values) out.push_back(sym_int(v, where));
  return out;
}

/// The tensors of one config record (`data/weights/model_weights_config.json`,
/// `data/constants/model_constants_config.json`); one storage per file.
void read_tensors(caffe2::serialize::PyTorchStreamReader& reader, const std::string& path, const std::string& folder,
                  const std::string& config_name, std::map<std::string, at::Tensor>& out) {
  std::string config_record = folder + config_name;
  if (!reader.hasRecord(config_record)) return;
  nlohmann::json config = record_json(reader, path, config_record);
  std::map<std::string, at::Tensor> storages;  // by file: a storage shared by several tensors is written once
  try {
    for (const auto& [name, entry] : config.at("config").items()) {
      std::string where = "tensor '" + name + "' (" + config_record + ")";
      TORCH_CHECK(!entry.value("use_pickle", false), where,
                  " is pickled (a tensor subclass or an opaque object): qfx reads plain tensors only");
      const auto& meta = entry.at("tensor_meta");
      TORCH_CHECK(meta.value("layout", 7) == 7, where, " is not a strided (dense) tensor");
      c10::ScalarType dtype = scalar_type(meta.at("dtype").get<int64_t>(), where);
      std::vector<int64_t> sizes = sym_ints(meta.at("sizes"), where + " sizes");
      std::vector<int64_t> strides = sym_ints(meta.at("strides"), where + " strides");
      int64_t offset = sym_int(meta.at("storage_offset"), where + " storage_offset");
      TORCH_CHECK(sizes.size() == strides.size(), where, ": ", sizes.size(), " sizes but ", strides.size(), " strides");
      std::string file = folder + entry.at("path_name").get<std::string>();
      auto& bytes = storages[file];
      if (!bytes.defined()) {
        TORCH_CHECK(reader.hasRecord(file), "record '", file, "' of ", where, " is missing");
        auto [data, size] = reader.getRecord(file);
        bytes = torch::empty({static_cast<int64_t>(size)}, torch::kUInt8);
        std::memcpy(bytes.data_ptr(), data.get(), size);
      }
      int64_t element = static_cast<int64_t>(c10::elementSize(dtype));
      int64_t extent = offset + 1;  // elements the view reaches, the last one included
      bool empty = false;
      for (size_t d = 0; d < sizes.size(); ++d) {
        TORCH_CHECK(sizes[d] >= 0 && strides[d] >= 0 && offset >= 0, where, " has negative sizes or strides");
        empty = empty || sizes[d] == 0;
        extent += (sizes[d] - 1) * strides[d];
      }
      TORCH_CHECK(empty || extent * element <= bytes.numel(), where, " needs ", extent * element, " bytes but record '",
                  file, "' holds ", bytes.numel());
      at::Tensor typed = bytes.narrow(0, 0, bytes.numel() - bytes.numel() % element).view(dtype);
      out[name] = empty ? torch::empty(sizes, torch::TensorOptions(dtype)) : typed.as_strided(sizes, strides, offset);
    }
  } catch (const nlohmann::json::exception& e) {
    fail(path, "record '" + config_record + "' is malformed (" + e.what() + ")");
  } catch (const c10::Error& e) {
    fail(path, e.msg());
  }
}

}  // namespace

nlohmann::json parse_program_json(std::string_view text, const std::string& path, const std::string& record) {
  try {
    return nlohmann::json::parse(without_python_literals(text));
  } catch (const nlohmann::json::exception& e) {
    fail(path, "record '" + record + "' is not valid JSON (" + e.what() + ")");
  }
}

void check_schema_version(const Archive& archive) {
  int major = 0, minor = 0;
  try {
    const auto& version = archive.program.at("schema_version");
    major = version.at("major").get<int>();
    minor = version.value("minor", 0);
  } catch (const nlohmann::json::exception& e) {
    fail(archive.path, archive.model_record + " has no schema_version (" + e.what() + ")");
  }
  if (major < kSchemaMajorMin || (major == kSchemaMajorMin && minor < kSchemaMinorMin) || major > kSchemaMajorMax) {
    fail(archive.path, archive.model_record + " has schema version " + std::to_string(major) + "." +
                           std::to_string(minor) + "; qfx reads torch.export schema versions " +
                           std::to_string(kSchemaMajorMin) + "." + std::to_string(kSchemaMinorMin) + " to " +
                           std::to_string(kSchemaMajorMax) + " (PyTorch 2.4 to 2.15)");
  }
}

c10::ScalarType scalar_type(int64_t serialized, const std::string& where) {
  // torch/_export/serde/schema.py: ScalarType
  static const std::map<int64_t, c10::ScalarType> kTypes = {
      {1, c10::kByte},        {2, c10::kChar},          {3, c10::kShort},          {4, c10::kInt},
      {5, c10::kLong},        {6, c10::kHalf},          {7, c10::kFloat},          {8, c10::kDouble},
      {9, c10::kComplexHalf}, {10, c10::kComplexFloat}, {11, c10::kComplexDouble}, {12, c10::kBool},
      {13, c10::kBFloat16},
  };
  auto it = kTypes.find(serialized);
  TORCH_CHECK(it != kTypes.end(), where, " has dtype ", serialized, " of torch.export's schema, which qfx cannot read");
  return it->second;
}

Archive read_archive(const std::string& path) {
  Archive archive;
  archive.path = path;
  std::ifstream file(path, std::ios::binary);
  if (!file) fail(path, "cannot open the file");
  for (const detail::ZipRecord& record : detail::zip_directory(file, path)) {  // a damaged one: an error here
    if (record.name == "serialized_exported_program.json") return read_flat_archive(path);
  }
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> reader;
  try {
    reader = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
  } catch (const c10::Error& e) {
    fail(path, std::string("not a PT2 archive (") + e.msg().substr(0, e.msg().find('\n')) + ")");
  }
  std::string byteorder = reader->hasRecord("byteorder") ? record_text(*reader, path, "byteorder") : "little";
  if (byteorder != "little") fail(path, "its tensors are " + byteorder + "-endian; qfx reads little-endian archives");
  archive.model_record = "models/model.json";
  if (!reader->hasRecord(archive.model_record)) {
    for (const std::string& name : reader->getAllRecords()) {
      if (name.rfind("models/", 0) == 0 && name.size() > 12 && name.compare(name.size() - 5, 5, ".json") == 0) {
        archive.model_record = name;  // a program saved under another name
        break;
      }
    }
  }
  archive.program = record_json(*reader, path, archive.model_record);
  check_schema_version(archive);
  upgrade_program(archive);
  read_tensors(*reader, path, "data/weights/", "model_weights_config.json", archive.tensors);
  read_tensors(*reader, path, "data/constants/", "model_constants_config.json", archive.tensors);
  return archive;
}

}  // namespace qfx::io::pt2
