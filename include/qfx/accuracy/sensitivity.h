#pragma once
/// \file
/// Which quantized nodes cost accuracy, and how much: trials on models
/// converted from one calibrated prepared model with chosen nodes left float
/// (their qconfig None at convert time, as convert_fx's qconfig_mapping
/// argument allows), scored on data held in memory. Observer statistics are
/// computed once, by the calibration; each trial converts a copy.
///
/// \code
///   QuantizationTrials trials(float_model, calibrated, convert, TrialMetric::kTop1, batches);
///   SensitivityReport report = analyze_sensitivity(trials);
///   std::cout << report.table();
/// \endcode

#include "qfx/accuracy/kernel_gaps.h"
#include "qfx/ir/graph_module.h"
#include "qfx/quant/qconfig_mapping.h"

#include <ATen/core/ivalue.h>
#include <nlohmann/json_fwd.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace qfx {

/// A batch of model inputs, with class labels for top-1.
struct LabelledBatch {
  std::vector<c10::IValue> inputs;
  at::Tensor labels;  ///< undefined when the data has none
};

/// How a trial is scored: top-1 accuracy in percent, or the SQNR in dB of the
/// model's output against the float model's.
enum class TrialMetric { kTop1, kSqnr };

/// "top1" or "sqnr".
const char* metric_name(TrialMetric metric);

/// A node trials can leave float.
struct QuantizableNode {
  std::string name;         ///< in the calibrated graph
  std::string op;           ///< call_module, call_function or call_method
  std::string target;       ///< as FX names it (a module path for call_module)
  std::string module_type;  ///< a call_module's class (`torch.ao.nn.intrinsic.ConvReLU2d`), else empty
};

/// Trials of one calibrated prepared model.
class QuantizationTrials {
 public:
  /// convert_fx (or convert_to_reference_fx) with the model's configs.
  using Convert = std::function<void(ir::GraphModule&)>;

  /// Scores the float model once (its outputs kept for SQNR); c10::Error
  /// when top-1 is asked of data without labels. `to_reference`
  /// (convert_to_reference_fx with the same configs), when given, makes
  /// kernel_gaps() available.
  QuantizationTrials(const ir::GraphModule& float_model, const ir::GraphModule& calibrated, Convert convert,
                     TrialMetric metric, std::vector<LabelledBatch> batches, Convert to_reference = {});

  TrialMetric metric() const { return metric_; }
  /// The quantizable nodes: nodes of the calibrated model that were observed
  /// with a qconfig (a fused group is one node), in graph order.
  const std::vector<QuantizableNode>& nodes() const { return nodes_; }
  /// The names of nodes(): the float nodes of the all-float trial.
  std::set<std::string> node_names() const;
  double float_score() const { return float_score_; }
  /// Seconds of the float model's scoring pass.
  double float_seconds() const { return float_seconds_; }
  /// The model converted with `float_nodes` left float.
  std::unique_ptr<ir::GraphModule> convert_with(const std::set<std::string>& float_nodes) const;
  /// The score of that model.
  double score(const std::set<std::string>& float_nodes) const;
  /// The scores of several such models, in one pass over the batches. From
  /// three models on, each resumes from the values of the model with every
  /// node quantized or the one with every node float after the leading nodes
  /// its converted graph has in common with them (same nodes, checked equal
  /// value by value on the first batch), so a trial runs only what its float
  /// nodes change. `shared_nodes`, when given, is set to the share of the
  /// trials' nodes taken from those models' values.
  std::vector<double> scores(const std::vector<std::set<std::string>>& float_sets,
                             double* shared_nodes = nullptr) const;
  /// Trials scored so far (each model of scores() is one).
  int64_t trials_run() const { return trials_run_; }
  /// Whether kernel_gaps() can be asked (a `to_reference` was given).
  bool has_reference() const { return static_cast<bool>(to_reference_); }
  /// The kernel gaps of the model with every node quantized (kernel_gaps.h),
  /// on up to four batches, by the reference model's node names; computed
  /// once. c10::Error without `to_reference`.
  const std::map<std::string, KernelGap>& kernel_gaps() const;

 private:
  const ir::GraphModule& calibrated_;
  Convert convert_;
  Convert to_reference_;
  TrialMetric metric_;
  std::vector<LabelledBatch> batches_;
  std::vector<at::Tensor> float_outputs_;
  std::vector<QuantizableNode> nodes_;
  double float_score_ = 0;
  double float_seconds_ = 0;
  mutable int64_t trials_run_ = 0;
  mutable std::optional<std::map<std::string, KernelGap>> kernel_gaps_;
};

/// Sets the qconfig of each of `float_nodes` (names of a calibrated prepared
/// model's nodes) to None, so that convert leaves them float.
void leave_float(ir::GraphModule& calibrated, const std::set<std::string>& float_nodes);

/// One node's trials.
struct NodeSensitivity {
  QuantizableNode node;
  double only_quantized = 0;  ///< the score with this node alone quantized
  double only_float = 0;      ///< the score with every other node quantized and this one float
  /// Its lowered output's gap from its reference output on the same inputs,
  /// in quantization steps (kernel_gaps.h); -1 when not measured.
  int64_t kernel_gap = -1;
  /// More than rounding apart: LibTorch's kernel (or the lowering) is at
  /// fault, not the node's sensitivity to quantization.
  bool kernel_fault() const { return kernel_gap > 1; }
};

/// Every node's trials, kernel faults first (largest gap first), then the
/// most sensitive: the largest gain when the node alone stays float, then
/// the largest loss when it alone is quantized.
struct SensitivityReport {
  TrialMetric metric = TrialMetric::kTop1;
  double float_score = 0;
  double quantized_score = 0;  ///< every node quantized
  std::vector<NodeSensitivity> nodes;
  double float_seconds = 0;  ///< one scoring pass of the float model
  double seconds = 0;        ///< all trials
  double shared_nodes = 0;   ///< the share of the trials' nodes not run again (see QuantizationTrials::scores)

  /// {"metric", "float", "quantized", "float_seconds", "seconds", "shared_nodes", "nodes": [{"node", "op", "target",
  /// "module_type", "only_quantized", "only_float", "kernel_gap_steps", "kernel_fault"}, ...]}
  nlohmann::json to_json() const;
  /// The ranked table, one line per node.
  std::string table() const;
};

/// Runs, for each quantizable node, the trial with only that node quantized
/// and the one with only that node float; adds the kernel gaps when the
/// trials have a reference convert.
SensitivityReport analyze_sensitivity(const QuantizationTrials& trials);

}  // namespace qfx
