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

#include "qfx/ir/graph_module.h"
#include "qfx/quant/qconfig_mapping.h"

#include <ATen/core/ivalue.h>
#include <nlohmann/json_fwd.hpp>

#include <functional>
#include <memory>
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
  /// when top-1 is asked of data without labels.
  QuantizationTrials(const ir::GraphModule& float_model, const ir::GraphModule& calibrated, Convert convert,
                     TrialMetric metric, std::vector<LabelledBatch> batches);

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

 private:
  const ir::GraphModule& calibrated_;
  Convert convert_;
  TrialMetric metric_;
  std::vector<LabelledBatch> batches_;
  std::vector<at::Tensor> float_outputs_;
  std::vector<QuantizableNode> nodes_;
  double float_score_ = 0;
  double float_seconds_ = 0;
};

/// Sets the qconfig of each of `float_nodes` (names of a calibrated prepared
/// model's nodes) to None, so that convert leaves them float.
void leave_float(ir::GraphModule& calibrated, const std::set<std::string>& float_nodes);

/// One node's trials.
struct NodeSensitivity {
  QuantizableNode node;
  double only_quantized = 0;  ///< the score with this node alone quantized
  double only_float = 0;      ///< the score with every other node quantized and this one float
};

/// Every node's trials, most sensitive first: the largest gain when the node
/// alone stays float, then the largest loss when it alone is quantized.
struct SensitivityReport {
  TrialMetric metric = TrialMetric::kTop1;
  double float_score = 0;
  double quantized_score = 0;  ///< every node quantized
  std::vector<NodeSensitivity> nodes;
  double float_seconds = 0;  ///< one scoring pass of the float model
  double seconds = 0;        ///< all trials
  double shared_nodes = 0;   ///< the share of the trials' nodes not run again (see QuantizationTrials::scores)

  /// {"metric", "float", "quantized", "float_seconds", "seconds", "shared_nodes", "nodes": [{"node", "op", "target",
  /// "type", "only_quantized", "only_float"}, ...]}
  nlohmann::json to_json() const;
  /// The ranked table, one line per node.
  std::string table() const;
};

/// Runs, for each quantizable node, the trial with only that node quantized
/// and the one with only that node float.
SensitivityReport analyze_sensitivity(const QuantizationTrials& trials);

/// One node the fallback left float, and the score after it.
struct FallbackStep {
  QuantizableNode node;
  double score = 0;  ///< with this node and those before it float
  double gain = 0;   ///< score minus the score before this step
};

/// What fall_back chose.
struct FallbackResult {
  double float_score = 0;
  double quantized_score = 0;  ///< every node quantized
  std::vector<FallbackStep> steps;
  double score = 0;  ///< with every step's node float
  bool met = false;  ///< float_score - score <= the budget
  /// The nodes left float.
  std::set<std::string> float_nodes() const;
  /// {"float", "quantized", "final", "met", "float_nodes": [{"node", "op", "target", "score", "gain"}, ...]}
  nlohmann::json to_json() const;
};

/// Accuracy-driven fallback: leaves nodes float, most sensitive first (the
/// gain of each node alone float), each step verified by a trial (a step that
/// does not raise the score is undone), until the score is within `max_drop`
/// of float, or `max_float_nodes` nodes are float (< 0: no limit). Only nodes a
/// QConfigMapping can name alone are candidates (call_module: module_name;
/// call_function: module_name_object_type_order).
FallbackResult fall_back(const QuantizationTrials& trials, double max_drop, int64_t max_float_nodes);

/// `mapping` with each of `float_nodes` (nodes of `calibrated`) set to None:
/// a module by module_name, a function by module_name_object_type_order
/// (its scope, target and index among the scope's calls of that target), so
/// that prepare_fx with it leaves exactly those nodes float.
quant::QConfigMapping mapping_with_float_nodes(quant::QConfigMapping mapping, const ir::GraphModule& calibrated,
                                               const std::set<std::string>& float_nodes);

}  // namespace qfx
