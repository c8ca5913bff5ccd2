// Zip archives as qfx reads them: TorchScript models (the importer) and
// torch.save data files (the tensor reader).
//
// Input: a flags byte, then either the archive's bytes (kRaw) or its
// records, each `#qfx-record NAME\n` then its bytes up to the next
// `\n#qfx-record `. Records are zipped by LibTorch's writer with valid
// CRCs, so that mutations reach the unpickler, the TorchScript compiler and
// qfx's importer rather than stop at the zip check. A `version` record sets
// the archive's version.
#include "fuzz/fuzz_target.h"

#include "qfx/io/data_source.h"
#include "qfx/io/torchscript_import.h"
#include "qfx/ir/graph_module.h"

#include <c10/util/Exception.h>
#include <caffe2/serialize/inline_container.h>

#include <string>
#include <utility>
#include <vector>

namespace {

enum ArchiveFlags : uint8_t {
  kRaw = 1,   // the input is the archive
  kData = 2,  // read as calibration data (torch.save), not as a model
};

constexpr std::string_view kMarker = "#qfx-record ";

std::vector<std::pair<std::string, std::string_view>> split_records(std::string_view in) {
  std::vector<std::pair<std::string, std::string_view>> records;
  if (in.substr(0, kMarker.size()) != kMarker) return records;
  std::string separator = "\n" + std::string(kMarker);
  size_t at = 0;
  while (at != std::string_view::npos) {
    size_t name_end = in.find('\n', at);
    if (name_end == std::string_view::npos) break;
    std::string name(in.substr(at + kMarker.size(), name_end - at - kMarker.size()));
    size_t next = in.find(separator, name_end + 1);
    std::string_view body =
        in.substr(name_end + 1, next == std::string_view::npos ? std::string_view::npos : next - name_end - 1);
    records.emplace_back(std::move(name), body);
    at = next == std::string_view::npos ? next : next + 1;
  }
  return records;
}

/// The archive of `records`; empty when LibTorch's writer refuses them
/// (a name twice, a bad version).
std::string zip_records(std::string_view in) {
  std::string archive;
  try {
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* buf, size_t n) {
      archive.append(static_cast<const char*>(buf), n);
      return n;
    });
    for (const auto& [name, body] : split_records(in)) {
      if (name == "version" || name == ".data/version") {
        writer.setMinVersion(std::stoull(std::string(body)) % 16);
      } else {
        writer.writeRecord(name, body.data(), body.size());
      }
    }
    writer.writeEndOfFile();
  } catch (const std::exception&) {  // c10::Error from the writer; std::stoull's errors
    return {};
  }
  return archive;
}

}  // namespace

QFX_FUZZ_TARGET(archives) {
  if (size < 1) return false;
  uint8_t flags = data[0];
  std::string_view rest = qfx::fuzz::as_text(data + 1, size - 1);
  std::string archive = (flags & kRaw) ? std::string(rest) : zip_records(rest);
  if (archive.empty() && !(flags & kRaw)) return false;
  std::string file = qfx::fuzz::scratch_file("model.pt", archive);
  try {
    if (flags & kData) {
      qfx::io::DataOptions options;
      options.batch_size = 4;
      auto source = qfx::io::open_data(file, options);
      for (int b = 0; b < 64 && source->next(); ++b) {
      }
    } else {
      auto gm = qfx::io::import_torchscript(file);
      gm->graph().lint();
      gm->graph().to_string();
    }
    return true;
  } catch (const c10::Error&) {
    return false;
  }
}
