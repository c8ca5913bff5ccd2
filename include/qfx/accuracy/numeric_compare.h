#pragma once
/// \file
/// Per-layer comparison of a float model with its quantized form, the idea of
/// PyTorch's FX numeric suite (`torch.ao.ns._numeric_suite_fx`): log the
/// activations at matching nodes of both models on the same inputs and
/// measure how far the quantized ones are from the float ones (SQNR,
/// normalized L2 error, cosine similarity, the suite's `compute_*` metrics).
///
/// Nodes match by name: quantized models made from a float GraphModule keep
/// its FX node names (`conv1`, `layer1_0_relu`, `add_1`). A quantized node
/// that absorbed batch norms and relus (a fused conv-bn-relu named `conv1`)
/// is compared with the last float node it absorbed (the relu), as the suite
/// compares the ends of matched subgraphs. A quantized node with a new name
/// (`add_relu`) matches the float node that is absent from the quantized
/// model and reads the float ends of its inputs (`add`, then its relu).
///
/// \code
///   auto float_model = qfx::io::import_torchscript("model.pt");
///   qfx::NumericComparison comparison(*float_model, "model_int8.pt");
///   for (auto& batch : batches) comparison.add({batch});
///   for (const auto& layer : comparison.layers()) std::cout << layer.name << " " << layer.sqnr_db() << "\n";
/// \endcode

#include "qfx/ir/graph_module.h"

#include <ATen/core/ivalue.h>
#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <vector>

namespace qfx {

/// How close a quantized activation is to the float one, over every batch
/// added (sums over all elements, so batches weigh by their size).
struct LayerError {
  std::string name;         ///< the quantized model's node ("output" for the model output)
  std::string float_node;   ///< the float node it is compared with
  std::string op;           ///< the float node's FX op (`call_module`, `call_function`, ...)
  std::string target;       ///< its FX target (`layer1.0.conv1`, `torch.add`)
  std::string module_type;  ///< a call_module's class (`torch.nn.Conv2d`), else ""
  int64_t numel = 0;
  double float_sq = 0, quant_sq = 0, dot = 0, error_sq = 0;

  /// Accumulates one pair of activations (quantized ones are dequantized).
  void add(const at::Tensor& reference, const at::Tensor& quantized);
  /// `20 log10(||x|| / ||x - y||)`: infinite when equal.
  double sqnr_db() const;
  /// `||x - y|| / ||x||`.
  double normalized_l2() const;
  /// `<x, y> / (||x|| ||y||)` over the flattened activations.
  double cosine() const;
};

/// The source of a quantized model's activations: a qfx GraphModule (run by
/// the interpreter) or a TorchScript file (run by torch::jit, intermediate
/// values read by their names in the file's graph).
class ActivationSource {
 public:
  virtual ~ActivationSource() = default;
  /// The names of the values it can log, in execution order.
  virtual std::vector<std::string> names() const = 0;
  /// The names of the logged values `name` is computed from.
  virtual std::vector<std::string> inputs_of(const std::string& name) const = 0;
  /// Runs the model on `inputs`; `logged` receives the values of `wanted`
  /// (same order, undefined where absent), the output goes into `output`.
  virtual void run(const std::vector<c10::IValue>& inputs, const std::vector<std::string>& wanted,
                   std::vector<at::Tensor>& logged, at::Tensor& output) = 0;
};

/// A GraphModule's activations (each call_module / call_function /
/// call_method node).
std::unique_ptr<ActivationSource> graph_activations(const ir::GraphModule& model);

/// A TorchScript file's activations: tensors of its forward's top-level
/// nodes, named as in the graph (`conv1.1` is `conv1`). c10::Error naming
/// the file when it does not load.
std::unique_ptr<ActivationSource> script_activations(const std::string& path);

/// Compares `float_model` with a quantized model batch by batch.
class NumericComparison {
 public:
  /// Matches the quantized model's names with the float graph's nodes.
  /// c10::Error when no node matches (models not made from one another).
  NumericComparison(const ir::GraphModule& float_model, std::unique_ptr<ActivationSource> quantized);
  /// The quantized model in a TorchScript file.
  NumericComparison(const ir::GraphModule& float_model, const std::string& quantized_path);
  ~NumericComparison();

  /// Runs both models on one batch and accumulates the errors.
  void add(const std::vector<c10::IValue>& inputs);

  /// The matched layers in the float graph's order.
  const std::vector<LayerError>& layers() const { return layers_; }
  /// The model outputs.
  const LayerError& output() const { return output_; }
  int64_t batches() const { return batches_; }

  /// {"batches", "layers": [{"name", "float_node", "op", "sqnr_db",
  /// "normalized_l2", "cosine", "numel"}], "output": {...}}; an infinite SQNR is null.
  nlohmann::json to_json() const;

 private:
  std::unique_ptr<ActivationSource> quantized_;
  std::unique_ptr<ActivationSource> float_;
  std::vector<std::string> float_names_;  // per layer: the float node logged
  std::vector<std::string> quant_names_;  // per layer: the quantized value logged
  std::vector<LayerError> layers_;
  LayerError output_;
  int64_t batches_ = 0;
};

}  // namespace qfx
