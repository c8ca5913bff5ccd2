// read_flat_archive: the layout torch.export.save wrote from PyTorch 2.3 to
// 2.7. A plain zip with no root folder: `serialized_exported_program.json`,
// `serialized_state_dict.pt` and `serialized_constants.pt` (torch.save files
// of tensors by name; parameters pickled as nn.Parameter) and `version`
// ("major.minor" of the schema).

#include "archive.h"

#include "io/torch_save.h"
#include "io/zip_check.h"
#include "qfx/io/memory_bounds.h"

#include <filesystem>
#include <fstream>
#include <iterator>

namespace qfx::io::pt2 {
namespace {

const std::string kProgramRecord = "serialized_exported_program.json";

std::string_view record(const std::vector<detail::ZipRecord>& records, const std::string& path,
                        const std::string& name) {
  for (const detail::ZipRecord& r : records) {
    if (r.name != name) continue;
    if (!r.stored) fail(path, "record '" + name + "' is compressed; torch.export.save stores its records");
    return r.data;
  }
  fail(path, "record '" + name + "' is missing");
}

/// The tensors by name of a torch.save record (a dict); parameters as their tensors.
void read_tensors(std::string_view bytes, const std::string& path, const std::string& name,
                  std::map<std::string, at::Tensor>& out) {
  c10::IValue value;
  try {
    value = detail::read_torch_save(bytes, "'" + path + "' record '" + name + "'");
  } catch (const c10::Error& e) {
    std::string cause = e.what_without_backtrace();
    fail(path, "record '" + name + "' is not a torch.save file qfx reads (" + cause.substr(0, cause.find('\n')) + ")");
  }
  if (!value.isGenericDict())
    fail(path, "record '" + name + "' holds a " + value.tagKind() + ", not a dict of tensors");
  for (const auto& item : value.toGenericDict()) {
    std::string key = item.key().isString() ? item.key().toStringRef() : "?";
    if (!item.value().isTensor()) {
      fail(path, "'" + key + "' of record '" + name + "' is a " + item.value().tagKind() +
                     " (a script object or a tensor subclass): qfx reads plain tensors only");
    }
    out[key] = item.value().toTensor();
  }
}

/// The schema version the `version` record gives, when the program's JSON has none.
void take_version(Archive& archive, std::string_view version) {
  auto& field = archive.program["schema_version"];
  if (field.is_object()) return;
  const size_t dot = version.find('.');
  try {
    field = {{"major", std::stoi(std::string(version.substr(0, dot)))},
             {"minor", dot == std::string_view::npos ? 0 : std::stoi(std::string(version.substr(dot + 1)))}};
  } catch (const std::exception&) {
    fail(archive.path, "record 'version' holds '" + std::string(version.substr(0, 20)) + "', not a schema version");
  }
}

}  // namespace

Archive read_flat_archive(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open the file");
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  if (!error) check_fits_in_memory(2 * static_cast<uint64_t>(size), "reading '" + path + "'");  // file + tensors
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::vector<detail::ZipRecord> records = detail::check_zip_crcs(bytes, path);
  Archive archive;
  archive.path = path;
  archive.model_record = kProgramRecord;
  std::string_view program = record(records, path, kProgramRecord);
  archive.program = parse_program_json(program, path, kProgramRecord);
  if (!archive.program.is_object()) fail(path, "record '" + kProgramRecord + "' is not an exported program");
  take_version(archive, record(records, path, "version"));
  check_schema_version(archive);
  upgrade_program(archive);
  read_tensors(record(records, path, "serialized_state_dict.pt"), path, "serialized_state_dict.pt", archive.tensors);
  read_tensors(record(records, path, "serialized_constants.pt"), path, "serialized_constants.pt", archive.tensors);
  return archive;
}

}  // namespace qfx::io::pt2
