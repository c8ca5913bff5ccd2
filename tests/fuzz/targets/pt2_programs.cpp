// torch.export archives (.pt2) as the .pt2 reader reads them: the program's
// JSON (models/model.json), the tensors' configs and their raw records.
//
// Input: records, each `#qfx-record NAME\n` then its bytes (fuzz_target.h's
// zip_records), zipped with valid CRCs so that mutations reach the JSON
// reader and the graph builder rather than stop at the zip check.
#include "fuzz/fuzz_target.h"

#include "qfx/io/pt2_import.h"
#include "qfx/ir/graph_module.h"

#include <c10/util/Exception.h>

#include <string>

QFX_FUZZ_TARGET(pt2_programs) {
  std::string archive = qfx::fuzz::zip_records(qfx::fuzz::as_text(data, size));
  if (archive.empty()) return false;
  std::string file = qfx::fuzz::scratch_file("model.pt2", archive);
  try {
    auto gm = qfx::io::import_pt2(file);
    gm->graph().lint();
    gm->graph().to_string();
    return true;
  } catch (const c10::Error&) {
    return false;
  }
}
