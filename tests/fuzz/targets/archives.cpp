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

#include <string>

namespace {

enum ArchiveFlags : uint8_t {
  kRaw = 1,   // the input is the archive
  kData = 2,  // read as calibration data (torch.save), not as a model
};

}  // namespace

QFX_FUZZ_TARGET(archives) {
  if (size < 1) return false;
  uint8_t flags = data[0];
  std::string_view rest = qfx::fuzz::as_text(data + 1, size - 1);
  std::string archive = (flags & kRaw) ? std::string(rest) : qfx::fuzz::zip_records(rest);
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
