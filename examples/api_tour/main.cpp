// The README's C++ tour: import, prepare_fx, calibrate on real data,
// convert_fx, compare with the float model, export int8 TorchScript; then
// the same flow through the library pipeline, from the model's .pt2.
#include <qfx/backend/builtin_backends.h>
#include <qfx/io/data_source.h>
#include <qfx/io/torchscript_export.h>
#include <qfx/io/torchscript_import.h>
#include <qfx/ir/interpreter.h>
#include <qfx/accuracy/numeric_compare.h>
#include <qfx/pipeline.h>
#include <qfx/quant/qconfig_mapping.h>
#include <qfx/quantize.h>

#include <ATen/Context.h>
#include <iostream>

int main(int argc, char** argv) {
  std::string model = argc > 1 ? argv[1] : "examples/fashion_mnist/fashion_cnn.pt";
  std::string data = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
  at::globalContext().setQEngine(at::QEngine::ONEDNN);

  // 1. import a TorchScript model as an FX-style GraphModule
  auto gm = qfx::io::import_torchscript(model);

  // 2. prepare_fx: fuse, insert observers (QConfigMapping + BackendConfig)
  qfx::prepare_fx(*gm, qfx::quant::get_default_qconfig_mapping("onednn"), qfx::backend::get_native_backend_config());

  // 3. calibrate: run the prepared model on 8 batches of training images
  qfx::io::DataOptions options;
  options.batch_size = 32;
  options.max_batches = 8;
  options.mean = {0.2860};
  options.std = {0.3530};
  qfx::ir::Interpreter calibrate(*gm);
  auto source = qfx::io::open_data(data, options);
  while (auto batch = source->next()) calibrate.run(batch->inputs);

  // 4. convert_fx: reference model, then lowering to quantized onednn ops
  qfx::convert_fx(*gm);
  std::cout << gm->code() << "\n";

  // 5. per-layer SQNR against the float model, on one batch
  auto float_model = qfx::io::import_torchscript(model);
  qfx::NumericComparison comparison(*float_model, qfx::graph_activations(*gm));
  comparison.add(qfx::io::open_data(data, options)->next()->inputs);
  for (const qfx::LayerError& layer : comparison.layers()) {
    std::cout << layer.name << ": SQNR " << layer.sqnr_db() << " dB\n";
  }

  // 6. export int8 TorchScript: torch.jit.load / torch::jit::load run it
  qfx::io::export_torchscript(*gm, "fashion_cnn_int8.pt");

  // 7. the whole flow as `qfx quantize` runs it (qfx/pipeline.h), from PyTorch 2's .pt2 of the same model;
  //    the file is kept only when it runs on its check batch
  qfx::QuantizeOptions pipeline;
  pipeline.qconfig_mapping = qfx::quant::get_default_qconfig_mapping("onednn");
  auto pt2 = qfx::load_for_quantization("examples/fashion_mnist/fashion_cnn.pt2", pipeline);
  qfx::prepare(*pt2, pipeline);
  qfx::calibrate(*pt2, qfx::data_batches(data, options));
  qfx::ExportOptions how;
  how.path = "fashion_cnn_pt2_int8.pt";
  how.check = qfx::io::open_data(data, options)->next()->inputs;
  qfx::convert_and_export(*pt2, pipeline, how);
}
