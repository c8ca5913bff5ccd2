#pragma once
/// \file
/// The quantization pipeline `qfx quantize` runs, as a library: load a model
/// file by its format (TorchScript, torch.export's .pt2), improve the float
/// model (equalization, AdaRound, bias correction), prepare (prepare_fx or
/// prepare_qat_fx), train (QAT) and calibrate, convert; then export with
/// qfx/io/torchscript_export.h or qfx/io/onnx_export.h, or convert and
/// export at once with convert_and_export (the file kept only when it runs).
///
/// \code
///   qfx::QuantizeOptions options;
///   options.qconfig_mapping = qfx::quant::get_default_qconfig_mapping("qnnpack");
///   options.backend_config = qfx::backend::get_qnnpack_backend_config();
///   auto gm = qfx::quantize_model("model.pt2", options, qfx::data_batches("calib.pt", {}));
///   qfx::io::export_torchscript(*gm, "model_int8.pt");
/// \endcode

#include "qfx/accuracy/sensitivity.h"
#include "qfx/backend/backend_config.h"
#include "qfx/dist/distributed.h"
#include "qfx/io/data_source.h"
#include "qfx/io/onnx_export.h"
#include "qfx/io/output_file.h"
#include "qfx/ir/graph_module.h"
#include "qfx/passes/custom_config.h"
#include "qfx/quant/qconfig_mapping.h"

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace qfx {

/// What the pipeline does between loading and converting.
struct QuantizeOptions {
  quant::QConfigMapping qconfig_mapping;
  backend::BackendConfig backend_config;  ///< empty: the native backend config
  PrepareCustomConfig prepare_custom_config;
  ConvertCustomConfig convert_custom_config;
  bool qat = false;           ///< prepare_qat_fx; the model then calibrates in eval mode
  bool reference = false;     ///< convert_to_reference_fx instead of convert_fx
  bool equalize = false;      ///< cross-layer equalization before observation
  bool correct_bias = false;  ///< bias correction before observation (reads the calibration data)
  bool adaround = false;      ///< AdaRound before observation (reads the calibration data)
  int64_t adaround_iterations = 500;
};

/// One input of the model per element (a batch).
using Batch = std::vector<c10::IValue>;
/// The calibration data: each call runs `each` on every batch, in order (the
/// accuracy passes read the data once more than calibration does).
using Batches = std::function<void(const std::function<void(const Batch&)>& each)>;

/// `path` (any format io::load_model reads) imported as the pipeline needs it:
/// modules the PrepareCustomConfig keeps whole kept, checked against the
/// config; for post-training quantization, c10::Error naming the module when
/// the model was saved in training mode (a BatchNorm or Dropout with
/// training=True), which would calibrate as in training.
std::unique_ptr<ir::GraphModule> load_for_quantization(const std::string& path, const QuantizeOptions& options);

/// Equalization, AdaRound and bias correction as `options` asks (fusing the
/// model first, batch norms folded); nothing when it asks for none.
void improve_float_model(ir::GraphModule& model, const QuantizeOptions& options, const Batches& calibration);

/// prepare_fx, or prepare_qat_fx (the model left in eval mode) for `options.qat`.
void prepare(ir::GraphModule& model, const QuantizeOptions& options);

/// Runs the prepared model on every batch.
void calibrate(ir::GraphModule& model, const Batches& calibration);

/// Quantization-aware training settings (Adam on the cross-entropy loss).
struct TrainOptions {
  int64_t epochs = 1;
  double lr = 1e-5;
};

/// Training data (LabelledBatch: qfx/accuracy/sensitivity.h): each call runs `each` on the batches of epoch `epoch`
/// (counted from 0; the order may change with it).
using LabelledBatches = std::function<void(int64_t epoch, const std::function<void(const LabelledBatch&)>& each)>;

/// Trains a model prepared by prepare_qat_fx, as a classifier: its logits
/// against the labels (cross-entropy, Adam), fake quantization and observers
/// running, in training mode; leaves it in eval mode. With a `group`, each
/// rank trains on its own batches, gradients averaged over the ranks and
/// fake-quantize statistics synchronised after each step
/// (dist::average_gradients, dist::sync_fake_quantize); batch-norm running
/// statistics stay each rank's own, as under DistributedDataParallel without
/// SyncBatchNorm. `on_epoch` gets each epoch's mean loss. c10::Error when a
/// batch has no labels or the loss stops being finite.
void train(ir::GraphModule& prepared, const LabelledBatches& data, const TrainOptions& options,
           dist::ProcessGroup* group = nullptr, const std::function<void(int64_t epoch, double loss)>& on_epoch = {});

/// Labelled batches read from `path` by io::open_data (IDX images with their
/// labels, an image folder), epoch e in the order of `options.seed` + e
/// (file order without a seed). Of `world` ranks, `rank` takes every
/// world-th batch, as many as every rank has.
LabelledBatches labelled_data_batches(const std::string& path, io::DataOptions options, int64_t rank = 0,
                                      int64_t world = 1);

/// convert_fx, or convert_to_reference_fx for `options.reference`.
void convert(ir::GraphModule& model, const QuantizeOptions& options);

/// Where and how convert_and_export writes the model.
struct ExportOptions {
  std::string path;
  bool onnx = false;  ///< ONNX QDQ (made from the reference model), else TorchScript
  io::OnnxExportOptions onnx_options;
  Batch example;  ///< ONNX: the inputs of the run that gives shapes
  Batch check;    ///< a TorchScript file first runs once on it, as its host will; empty: no run
  /// A node the written file fails at is left float and the model converted again (without it,
  /// only for the LibTorch kernel limits qfx knows, with a warning; else an error naming the node).
  bool fallback_on_failure = false;
  io::OutputOptions outputs;
};

/// What convert_and_export wrote, and its time.
struct Exported {
  std::unique_ptr<ir::GraphModule> model;  ///< the converted model written
  double convert_s = 0, export_s = 0;
};

/// Converts a copy of the calibrated model as `options` says and writes it
/// as `how` says; kept only when the written file runs on `how.check`.
Exported convert_and_export(const ir::GraphModule& calibrated, const QuantizeOptions& options,
                            const ExportOptions& how);

/// The whole pipeline: load, improve, prepare, calibrate, convert.
std::unique_ptr<ir::GraphModule> quantize_model(const std::string& path, const QuantizeOptions& options,
                                                const Batches& calibration);

/// Batches held in memory.
Batches batches_of(std::vector<Batch> inputs);

/// Batches read from `path` by io::open_data (a torch.save file, IDX images,
/// an image folder), opened anew at each pass.
Batches data_batches(const std::string& path, const io::DataOptions& options);

}  // namespace qfx
