// Damaged .pt2 archives: each is one error naming the archive and the
// record, tensor or node at fault. The archives are the residual fixture
// (tests/pt2/fixtures) with one record changed.

#include "support/fixtures.h"

#include "qfx/io/model_file.h"
#include "qfx/io/pt2_import.h"

#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <functional>
#include <iterator>

namespace qfx {
namespace {

using Edit = std::function<bool(const std::string& record, std::string& bytes)>;  // false: drop the record

/// The residual fixture with `edit` applied to each record, written as `name`.
std::string edited(const std::string& name, const Edit& edit) {
  caffe2::serialize::PyTorchStreamReader reader(test::source_file("tests/pt2/fixtures/residual.pt2"));
  std::string path = ::testing::TempDir() + name;
  caffe2::serialize::PyTorchStreamWriter writer(path);
  for (const std::string& record : reader.getAllRecords()) {
    if (record == ".data/version" || record == "version") continue;  // the writer's own
    auto [data, size] = reader.getRecord(record);
    std::string bytes(static_cast<const char*>(data.get()), size);
    if (edit(record, bytes)) writer.writeRecord(record, bytes.data(), bytes.size());
  }
  writer.writeEndOfFile();
  return path;
}

/// Edits the JSON of `record` with `change`.
Edit json_edit(const std::string& record, std::function<void(nlohmann::json&)> change) {
  return [record, change](const std::string& name, std::string& bytes) {
    if (name == record) {
      nlohmann::json value = nlohmann::json::parse(bytes);
      change(value);
      bytes = value.dump();
    }
    return true;
  };
}

std::string error_of(const std::string& path) {
  return test::error_of([&] { io::load_model(path); });
}

TEST(Pt2Errors, ATruncatedArchiveNamesTheFile) {
  std::ifstream in(test::source_file("tests/pt2/fixtures/residual.pt2"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::string path = ::testing::TempDir() + "qfx_truncated.pt2";
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  std::string error = error_of(path);
  EXPECT_NE(error.find("'" + path + "'"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(Pt2Errors, NamesTheRecordAtFault) {
  std::string path = edited("qfx_bad_json.pt2", [](const std::string& name, std::string& bytes) {
    if (name == "models/model.json") bytes = "{not json";
    return true;
  });
  EXPECT_EQ(error_of(path).rfind("cannot read '" + path + "': record 'models/model.json' is not valid JSON (", 0), 0u);
  path = edited("qfx_no_weight.pt2",
                [](const std::string& name, std::string&) { return name != "data/weights/weight_0"; });
  EXPECT_EQ(error_of(path), "cannot read '" + path +
                                "': record 'data/weights/weight_0' of tensor 'stem.conv.weight' "
                                "(data/weights/model_weights_config.json) is missing");
  path = edited("qfx_short_weight.pt2", [](const std::string& name, std::string& bytes) {
    if (name == "data/weights/weight_0") bytes.resize(10);
    return true;
  });
  EXPECT_EQ(error_of(path), "cannot read '" + path +
                                "': tensor 'stem.conv.weight' (data/weights/model_weights_config.json) needs 864 "
                                "bytes but record 'data/weights/weight_0' holds 10");
  path = edited("qfx_pickled.pt2", json_edit("data/weights/model_weights_config.json",
                                             [](nlohmann::json& v) { v["config"]["head.bias"]["use_pickle"] = true; }));
  EXPECT_EQ(error_of(path), "cannot read '" + path +
                                "': tensor 'head.bias' (data/weights/model_weights_config.json) is pickled (a tensor "
                                "subclass or an opaque object): qfx reads plain tensors only");
}

TEST(Pt2Errors, RefusesAnUnknownSchemaVersion) {
  std::string path = edited("qfx_schema.pt2", json_edit("models/model.json", [](nlohmann::json& v) {
                              v["schema_version"] = {{"major", 99}, {"minor", 1}};
                            }));
  EXPECT_EQ(error_of(path), "cannot read '" + path +
                                "': models/model.json has schema version 99.1; qfx reads torch.export schema "
                                "versions 5.3 to 8 (PyTorch 2.4 to 2.15)");
  path = test::source_file("tests/pt2/fixtures/residual.pt23.pt2");  // written by PyTorch 2.3.1
  EXPECT_EQ(error_of(path), "cannot read '" + path +
                                "': serialized_exported_program.json has schema version 5.1; qfx reads torch.export "
                                "schema versions 5.3 to 8 (PyTorch 2.4 to 2.15)");
}

TEST(Pt2Errors, NamesTheNodeAtFault) {
  std::string path = edited("qfx_dangling.pt2", json_edit("models/model.json", [](nlohmann::json& v) {
                              auto& node = v["graph_module"]["graph"]["nodes"][3];
                              node["inputs"][0]["arg"]["as_tensor"]["name"] = "ghost";
                            }));
  std::string error = error_of(path);
  EXPECT_NE(error.find("cannot read '" + path + "': node '"), std::string::npos) << error;
  EXPECT_NE(error.find("': value 'ghost' is used before any node makes it"), std::string::npos) << error;
  path = edited("qfx_new_op.pt2", json_edit("models/model.json", [](nlohmann::json& v) {
                  for (auto& node : v["graph_module"]["graph"]["nodes"]) {
                    if (node["target"] == "torch.ops.aten.add.Tensor") {
                      node["target"] = "torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default";
                    }
                  }
                }));
  EXPECT_EQ(error_of(path), "cannot read '" + path +
                                "': node 'add': op torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default "
                                "has no schema in LibTorch 1.13's ATen");
}

/// The flat residual fixture (PyTorch 2.6/2.7's layout) with `change` applied to its bytes.
std::string flat_edited(const std::string& name, const std::function<void(std::string&)>& change) {
  std::ifstream in(test::source_file("tests/pt2/fixtures/residual.flat.pt2"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  change(bytes);
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

/// Every occurrence of `from` in `bytes` replaced by `to` (of the same length).
void replace_all(std::string& bytes, const std::string& from, const std::string& to) {
  for (size_t at = bytes.find(from); at != std::string::npos; at = bytes.find(from, at + 1))
    bytes.replace(at, from.size(), to);
}

TEST(Pt2Errors, NamesTheFlatLayoutsRecordAtFault) {
  std::string path = flat_edited("qfx_flat_no_constants.pt2", [](std::string& bytes) {
    replace_all(bytes, "serialized_constants.pt", "serialized_constantX.pt");
  });
  EXPECT_EQ(error_of(path), "cannot read '" + path + "': record 'serialized_constants.pt' is missing");
  path = flat_edited("qfx_flat_corrupt.pt2", [](std::string& bytes) {
    size_t weights = bytes.find("serialized_state_dict.pt");  // the local header; its data follows the name
    bytes[weights + 24 + 200] ^= 0x5a;
  });
  EXPECT_EQ(error_of(path), "'" + path +
                                "': record 'serialized_state_dict.pt' is corrupt (its CRC-32 does not match "
                                "the archive's directory)");
  path = flat_edited("qfx_flat_truncated.pt2", [](std::string& bytes) { bytes.resize(bytes.size() / 2); });
  std::string error = error_of(path);
  EXPECT_NE(error.find("'" + path + "'"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

}  // namespace
}  // namespace qfx
