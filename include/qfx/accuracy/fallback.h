#pragma once
/// \file
/// Accuracy-driven fallback: which nodes of a calibrated model to leave
/// float so that the converted model is within a budget of the float one,
/// searched as NNCF's accuracy-aware quantization and AIMET's AutoQuant do:
///
/// 1. rank the candidates: kernel faults first (a lowered op further from
///    its reference than rounding, kernel_gaps.h), then by the larger of the
///    damage the node does when it alone is quantized and the gain when it
///    alone is float (one trial each, scored together);
/// 2. leave the ranked nodes float cumulatively, the shortest prefix of the
///    ranking that meets the budget (prefixes of 1, 2, 4, ... nodes, then
///    bisection), so damage spread over many layers is found even where no
///    single node helps alone;
/// 3. give back (quantize again) the prefix's nodes the budget does not
///    need, least important first.
///
/// Every trial is counted; the search stops at `max_trials`.
///
/// \code
///   FallbackOptions options;
///   options.max_drop = 0.5;
///   FallbackResult result = fall_back(trials, options);
///   if (!result.met) ...  // the budget cannot be met (or the trials ran out)
/// \endcode

#include "qfx/accuracy/sensitivity.h"

#include <cmath>
#include <cstdint>

namespace qfx {

/// What fall_back searches for.
struct FallbackOptions {
  /// The budget: at most this far below the float score; -inf: no budget
  /// (the max_float_nodes most important nodes).
  double max_drop = -INFINITY;
  /// At most this many nodes float (< 0: no limit).
  int64_t max_float_nodes = -1;
  /// At most this many trials (< 0: max_trials_for(candidates), the most the
  /// search can take, so it always finishes).
  int64_t max_trials = -1;
};

/// The most trials fall_back takes for `candidates` nodes: one all-quantized,
/// two per node, the prefixes (2 log2), the give-backs (one per node).
int64_t max_trials_for(int64_t candidates);

/// One node the fallback left float.
struct FallbackStep {
  QuantizableNode node;
  double gain = 0;          ///< the result's score minus the score with this node quantized again
  int64_t kernel_gap = -1;  ///< its kernel gap in steps (-1: not measured)
};

/// What fall_back chose.
struct FallbackResult {
  double float_score = 0;
  double quantized_score = 0;  ///< every node quantized
  std::vector<FallbackStep> steps;
  double score = 0;            ///< with every step's node float
  bool met = false;            ///< float_score - score <= the budget
  int64_t candidates = 0;      ///< nodes the search could leave float
  int64_t trials = 0;          ///< trials it ran
  bool out_of_trials = false;  ///< stopped at max_trials
  /// The nodes left float.
  std::set<std::string> float_nodes() const;
  /// {"float", "quantized", "final", "met", "candidates", "trials", "out_of_trials",
  ///  "float_nodes": [{"node", "op", "target", "gain", "kernel_gap_steps"}, ...]}
  nlohmann::json to_json() const;
};

/// The search above. Candidates: the quantizable nodes a QConfigMapping can
/// name alone (call_module: module_name; call_function:
/// module_name_object_type_order), activations included. Kernel gaps rank
/// first when the trials have a reference convert.
FallbackResult fall_back(const QuantizationTrials& trials, const FallbackOptions& options);

/// `mapping` with each of `float_nodes` (nodes of `calibrated`) set to None:
/// a module by module_name, a function by module_name_object_type_order
/// (its scope, target and index among the scope's calls of that target), so
/// that prepare_fx with it leaves exactly those nodes float.
quant::QConfigMapping mapping_with_float_nodes(quant::QConfigMapping mapping, const ir::GraphModule& calibrated,
                                               const std::set<std::string>& float_nodes);

}  // namespace qfx
