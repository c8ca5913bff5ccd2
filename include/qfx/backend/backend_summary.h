#pragma once
/// \file
/// What a BackendConfig supports, as a table: for each pattern, the dtypes
/// it runs with, grouped by kind of quantization (static, dynamic,
/// weight-only, fp16). `qfx backend-config check` prints it for a file and
/// `qfx backend-config docs` writes it for every built-in (docs/backends.md).

#include "qfx/backend/backend_config.h"

#include <array>
#include <string>
#include <vector>

namespace qfx::backend {

/// The kind of quantization one DTypeConfig describes.
enum class SupportKind {
  kStatic,      ///< quantized input and output (observed and calibrated)
  kDynamic,     ///< `is_dynamic`: activations quantized at run time
  kWeightOnly,  ///< float input and output, quantized weight (embeddings)
  kFloat16,     ///< float16 input and output
};

constexpr size_t kNumSupportKinds = 4;

/// "static", "dynamic", "weight-only", "fp16".
const char* support_kind_name(SupportKind kind);

/// Which kind `config` is: dynamic if `is_dynamic`, fp16 for a float16
/// input, static for a quantized input, weight-only otherwise.
SupportKind support_kind(const DTypeConfig& config);

/// A DTypeConfig in a few words: `quint8, w qint8` (input and weight dtypes),
/// `w quint4x2` for weight-only; `*` marks qparam constraints.
std::string dtype_config_label(const DTypeConfig& config);

/// One row of the table.
struct PatternSupport {
  std::string pattern;       ///< Pattern::str()
  std::string observation;   ///< "own observer", "shares input's", "not observed"
  std::string fused_module;  ///< what the pattern fuses into; empty if nothing
  /// Labels per SupportKind, in the config's order; empty: not supported.
  std::array<std::vector<std::string>, kNumSupportKinds> dtypes;
};

/// One row per pattern config, in the config's order.
std::vector<PatternSupport> summarize(const BackendConfig& config);

/// The table in Markdown (one row per pattern), with a legend line.
std::string support_table_markdown(const BackendConfig& config);

/// docs/backends.md: an overview of the built-in backends and the table of
/// each one.
std::string builtin_backends_markdown();

}  // namespace qfx::backend
