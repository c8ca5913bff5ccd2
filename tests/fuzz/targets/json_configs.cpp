// The JSON readers: QConfigMapping, BackendConfig, the custom configs and
// observer specs, all fed the same document as the CLI reads it from a file.
// What a reader accepts, its writer writes back so that reading it again
// gives the same JSON.
#include "fuzz/fuzz_target.h"

#include "qfx/backend/backend_json.h"
#include "qfx/passes/custom_config_json.h"
#include "qfx/quant/qconfig_json.h"

#include <c10/util/Exception.h>
#include <nlohmann/json.hpp>

namespace {

using nlohmann::json;

/// Reads `doc` with `read`; when it is accepted, `write` then `read` again
/// must give back the JSON `write` gave the first time. True if accepted.
template <class Read, class Write>
bool round_trip(const json& doc, Read read, Write write, const char* what) {
  json written;
  try {
    written = write(read(doc));
  } catch (const c10::Error&) {
    return false;
  }
  json again = write(read(written));  // a c10::Error here is a finding: qfx refuses what it wrote
  qfx::fuzz::require(again == written, std::string(what) + ": writing what was read does not round-trip");
  return true;
}

template <class Read>
bool read_only(const json& doc, Read read) {
  try {
    read(doc);
    return true;
  } catch (const c10::Error&) {
    return false;
  }
}

}  // namespace

QFX_FUZZ_TARGET(json_configs) {
  json doc;
  try {
    doc = qfx::quant::load_json_file(qfx::fuzz::scratch_file("config.json", qfx::fuzz::as_text(data, size)));
  } catch (const c10::Error&) {
    return false;
  }
  bool accepted = false;
  accepted |=
      round_trip(doc, qfx::quant::qconfig_mapping_from_json, qfx::quant::qconfig_mapping_to_json, "QConfigMapping");
  accepted |=
      round_trip(doc, qfx::backend::backend_config_from_json, qfx::backend::backend_config_to_json, "BackendConfig");
  accepted |= round_trip(
      doc, [](const json& j) { return qfx::quant::spec_from_json(j, "spec"); }, qfx::quant::spec_to_json,
      "observer spec");
  accepted |= round_trip(
      doc, [](const json& j) { return qfx::quant::qconfig_from_json(j, "qconfig"); }, qfx::quant::qconfig_to_json,
      "QConfig");
  accepted |= read_only(doc, qfx::prepare_custom_config_from_json);
  accepted |= read_only(doc, qfx::convert_custom_config_from_json);
  accepted |= read_only(doc, qfx::fuse_custom_config_from_json);
  return accepted;
}
