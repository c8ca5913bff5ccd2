#pragma once
// A torch.export archive (.pt2) in memory: its exported program's JSON and
// its tensors (parameters, buffers, constants) by fully qualified name.
// Internal to src/io.

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <string_view>

namespace qfx::io::pt2 {

/// The schema versions of `torch/_export/serde/schema.py` qfx reads: 5.3
/// (PyTorch 2.4) to 8.x. Not 5.1 (2.3), whose export records decomposed ops
/// (native_layer_norm, t + addmm, mean for adaptive pooling) no leaf is rebuilt from.
inline constexpr int kSchemaMajorMin = 5;
inline constexpr int kSchemaMinorMin = 3;
inline constexpr int kSchemaMajorMax = 8;

struct Archive {
  std::string path;                           ///< for errors
  std::string model_record;                   ///< "models/model.json"
  nlohmann::json program;                     ///< the ExportedProgram, as the schema serializes it
  std::map<std::string, at::Tensor> tensors;  ///< "conv.weight", "bn.running_mean", constants by name
};

/// Reads the PT2 archive at `path`: PyTorch 2.8+'s layout (`archive_format`,
/// `models/<name>.json`, raw tensors under `data/`) or 2.3-2.7's flat one
/// (read_flat_archive). c10::Error naming the
/// archive and the record for anything qfx cannot read: a missing or corrupt
/// record, a tensor whose bytes disagree with its metadata, a pickled tensor
/// (a tensor subclass), an unknown schema major version.
Archive read_archive(const std::string& path);

/// Reads the flat layout torch.export.save wrote up to PyTorch 2.7
/// (`serialized_exported_program.json`, torch.save files of the state dict and
/// constants, `version`); the same errors as read_archive.
Archive read_flat_archive(const std::string& path);

/// c10::Error naming the archive unless the program's schema major version is
/// one qfx reads.
void check_schema_version(const Archive& archive);

/// The program as PyTorch 2.15's export records it (program_upgrade.cpp):
/// a schema 7 node (PyTorch 2.5) gets the name schema 8 gives it, and a core
/// ATen op that stands for a composite one (an inference BatchNorm's
/// `_native_batch_norm_legit_no_training`, 2.5's view for torch.flatten) becomes
/// that op; a node an export pass hoisted is read where its value is used.
void upgrade_program(Archive& archive);

/// The JSON text of a serialized program, parsed; Python's `Infinity`,
/// `-Infinity` and `NaN` (which PyTorch 2.3-2.7 write for an unbounded
/// dimension's range) read as null, as 2.8+ writes it. c10::Error naming the
/// archive and `record` when it is not JSON.
nlohmann::json parse_program_json(std::string_view text, const std::string& path, const std::string& record);

/// Throws c10::Error "cannot read '<path>': <what>".
[[noreturn]] void fail(const std::string& path, const std::string& what);

/// A serialized ScalarType (schema.py's enum) as ATen's; c10::Error for one
/// ATen 1.13 lacks.
c10::ScalarType scalar_type(int64_t serialized, const std::string& where);

}  // namespace qfx::io::pt2
