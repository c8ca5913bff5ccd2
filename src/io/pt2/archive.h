#pragma once
// A torch.export archive (.pt2) in memory: its exported program's JSON and
// its tensors (parameters, buffers, constants) by fully qualified name.
// Internal to src/io.

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <map>
#include <string>

namespace qfx::io::pt2 {

/// The schema major versions of `torch/_export/serde/schema.py` qfx reads.
inline constexpr int kSchemaMajorMin = 7;
inline constexpr int kSchemaMajorMax = 8;

struct Archive {
  std::string path;                           ///< for errors
  std::string model_record;                   ///< "models/model.json"
  nlohmann::json program;                     ///< the ExportedProgram, as the schema serializes it
  std::map<std::string, at::Tensor> tensors;  ///< "conv.weight", "bn.running_mean", constants by name
};

/// Reads the PT2 archive at `path` (PyTorch 2.8+ layout: `archive_format`,
/// `models/<name>.json`, raw tensors under `data/`). c10::Error naming the
/// archive and the record for anything qfx cannot read: a missing or corrupt
/// record, a tensor whose bytes disagree with its metadata, a pickled tensor
/// (a tensor subclass), an unknown schema major version.
Archive read_archive(const std::string& path);

/// A serialized ScalarType (schema.py's enum) as ATen's; c10::Error for one
/// ATen 1.13 lacks.
c10::ScalarType scalar_type(int64_t serialized, const std::string& where);

}  // namespace qfx::io::pt2
