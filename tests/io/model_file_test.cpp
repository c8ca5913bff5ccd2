// load_model's door (io/model_file.h): a model file's format told by its
// records and bytes, not its name, and one error naming what a file is when
// qfx has no reader for it.

#include "qfx/io/model_file.h"
#include "qfx/io/onnx_export.h"
#include "support/fixtures.h"

#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>

#include <fstream>

namespace qfx {
namespace {

/// A zip archive of empty records named `names`, as PyTorch writes them: in
/// one folder named after the file (`archive/...`).
std::string zip_with(const std::string& name, const std::vector<std::string>& names) {
  std::string path = ::testing::TempDir() + name;
  caffe2::serialize::PyTorchStreamWriter writer(path);
  for (const std::string& record : names) writer.writeRecord(record, "1", 1);
  writer.writeEndOfFile();
  return path;
}

TEST(ModelFile, TellsFormatsByTheirContent) {
  EXPECT_EQ(io::model_format(test::source_file("examples/fashion_mnist/fashion_cnn.pt")),
            io::ModelFormat::kTorchScript);
  // PyTorch 2.8+: archive_format, models/<name>.json, data/weights/...; 2.0-2.7: the flat layout
  EXPECT_EQ(io::model_format(zip_with("qfx_new.pt2", {"archive_format", "models/model.json", "byteorder"})),
            io::ModelFormat::kPt2);
  EXPECT_EQ(io::model_format(zip_with("qfx_flat.bin", {"serialized_exported_program.json", "version"})),
            io::ModelFormat::kPt2Flat);
  EXPECT_EQ(io::model_format(zip_with("qfx_other.zip", {"readme.txt"})), io::ModelFormat::kUnknown);
  std::string onnx = ::testing::TempDir() + "qfx_model.pt";  // the name says TorchScript, the bytes ONNX
  io::export_onnx(*test::conv_bn_linear(), {at::rand({1, 2, 4, 4})}, onnx);
  EXPECT_EQ(io::model_format(onnx), io::ModelFormat::kOnnx);
}

TEST(ModelFile, SaysWhatAFileIsWhenQfxHasNoReaderForIt) {
  std::string pt2 = zip_with("qfx_model.pt2", {"archive_format", "models/model.json"});
  EXPECT_EQ(test::error_of([&] { io::load_model(pt2); }).rfind("cannot read '" + pt2 + "': models/model.json has no schema_version", 0), 0u);
  std::string flat = zip_with("qfx_model_flat.pt2", {"serialized_exported_program.json", "version"});
  EXPECT_EQ(test::error_of([&] { io::load_model(flat); }).rfind("cannot read '" + flat + "': ", 0), 0u);  // read, and refused
  std::string onnx = ::testing::TempDir() + "qfx_model.onnx";
  io::export_onnx(*test::conv_bn_linear(), {at::rand({1, 2, 4, 4})}, onnx);
  EXPECT_NE(test::error_of([&] { io::load_model(onnx); }).find("is an ONNX model"), std::string::npos);
  std::string text = ::testing::TempDir() + "qfx_model.txt";
  std::ofstream(text) << "not a model";
  EXPECT_NE(test::error_of([&] { io::load_model(text); }).find("is not a TorchScript archive"), std::string::npos);
  EXPECT_EQ(test::error_of([&] { io::model_format("/nonexistent/qfx_model.pt"); }),
            "cannot open model file '/nonexistent/qfx_model.pt'");
}

TEST(ModelFile, LoadsTorchScriptAsBefore) {
  auto gm = io::load_model(test::source_file("examples/fashion_mnist/fashion_cnn.pt"));
  EXPECT_EQ(gm->code(), io::import_torchscript(test::source_file("examples/fashion_mnist/fashion_cnn.pt"))->code());
}

}  // namespace
}  // namespace qfx
