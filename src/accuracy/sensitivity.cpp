// Sensitivity trials: convert copies of one calibrated model with chosen
// nodes float, score them on batches in memory.

#include "qfx/accuracy/sensitivity.h"

#include "qfx/ir/interpreter.h"
#include "qfx/ir/module_registry.h"
#include "qfx/passes/prepare_state.h"
#include "qfx/quant/observer_base.h"
#include "shared_prefix_runs.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>

namespace qfx {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

at::Tensor output_tensor(const c10::IValue& value) {
  TORCH_CHECK(value.isTensor(), "sensitivity trials need a model whose output is one tensor, not ", value.tagKind());
  return value.toTensor().to(at::kFloat);
}

bool is_quantizable(const ir::GraphModule& gm, const ir::Node& node) {
  if (!passes::node_is_observed(node) || !passes::node_qconfig(node).has_value()) return false;
  switch (node.op()) {
    case ir::Opcode::kCallModule:
      return dynamic_cast<const quant::ActivationPostProcess*>(gm.get_submodule(node.target()).get()) == nullptr;
    case ir::Opcode::kCallFunction:
    case ir::Opcode::kCallMethod: return true;
    default: return false;
  }
}

}  // namespace

const char* metric_name(TrialMetric metric) { return metric == TrialMetric::kTop1 ? "top1" : "sqnr"; }

QuantizationTrials::QuantizationTrials(const ir::GraphModule& float_model, const ir::GraphModule& calibrated,
                                       Convert convert, TrialMetric metric, std::vector<LabelledBatch> batches)
    : calibrated_(calibrated), convert_(std::move(convert)), metric_(metric), batches_(std::move(batches)) {
  TORCH_CHECK(!batches_.empty(), "sensitivity trials need data: no batches");
  for (const LabelledBatch& batch : batches_) {
    TORCH_CHECK(metric != TrialMetric::kTop1 || batch.labels.defined(),
                "the top1 metric needs labelled data (or use the sqnr metric)");
  }
  for (const ir::Node* node : calibrated.graph().nodes()) {
    if (!is_quantizable(calibrated, *node)) continue;
    std::string type = node->op() == ir::Opcode::kCallModule
                           ? ir::module_type_name(*calibrated.get_submodule(node->target()))
                           : std::string();
    nodes_.push_back({node->name(), ir::opcode_name(node->op()), node->target(), type});
  }
  auto start = std::chrono::steady_clock::now();
  ir::Interpreter interpreter(float_model);
  int64_t correct = 0;
  int64_t items = 0;
  for (const LabelledBatch& batch : batches_) {
    float_outputs_.push_back(output_tensor(interpreter.run(batch.inputs)));
    if (metric == TrialMetric::kTop1) {
      correct += float_outputs_.back().argmax(1).eq(batch.labels).sum().item<int64_t>();
      items += batch.labels.size(0);
    }
  }
  float_score_ =
      metric == TrialMetric::kTop1 ? 100.0 * static_cast<double>(correct) / static_cast<double>(items) : INFINITY;
  float_seconds_ = seconds_since(start);
}

std::set<std::string> QuantizationTrials::node_names() const {
  std::set<std::string> names;
  for (const QuantizableNode& node : nodes_) names.insert(node.name);
  return names;
}

void leave_float(ir::GraphModule& calibrated, const std::set<std::string>& float_nodes) {
  for (ir::Node* node : calibrated.graph().nodes()) {
    if (float_nodes.count(node->name()) > 0) node->meta()[passes::kQConfigMeta] = quant::QConfigAny{};
  }
}

std::unique_ptr<ir::GraphModule> QuantizationTrials::convert_with(const std::set<std::string>& float_nodes) const {
  std::unique_ptr<ir::GraphModule> model = calibrated_.deep_copy();
  leave_float(*model, float_nodes);
  convert_(*model);
  return model;
}

namespace {

// A trial's score, summed over batches.
class Tally {
 public:
  void add(const at::Tensor& out, const LabelledBatch& batch, const at::Tensor& float_out, TrialMetric metric) {
    if (metric == TrialMetric::kTop1) {
      correct_ += out.argmax(1).eq(batch.labels).sum().item<int64_t>();
      items_ += batch.labels.size(0);
    } else {
      signal_ += float_out.to(at::kDouble).pow(2).sum().item<double>();
      noise_ += (float_out.to(at::kDouble) - out.to(at::kDouble)).pow(2).sum().item<double>();
    }
  }
  double value(TrialMetric metric) const {
    if (metric == TrialMetric::kTop1) return 100.0 * static_cast<double>(correct_) / static_cast<double>(items_);
    return noise_ == 0 ? INFINITY : 10.0 * std::log10(signal_ / noise_);
  }

 private:
  int64_t correct_ = 0;
  int64_t items_ = 0;
  double signal_ = 0;
  double noise_ = 0;
};

// From this many trials on, the trials resume from two base models (every
// node quantized, every node float) where their graphs begin alike; for
// fewer, the base models' passes would cost more than they save.
constexpr size_t kSharedPrefixTrials = 3;

std::vector<const ir::GraphModule*> pointers(const std::vector<std::unique_ptr<ir::GraphModule>>& models) {
  std::vector<const ir::GraphModule*> out;
  for (const auto& model : models) out.push_back(model.get());
  return out;
}

}  // namespace

double QuantizationTrials::score(const std::set<std::string>& float_nodes) const { return scores({float_nodes})[0]; }

std::vector<double> QuantizationTrials::scores(const std::vector<std::set<std::string>>& float_sets,
                                               double* shared_nodes) const {
  std::vector<std::unique_ptr<ir::GraphModule>> models;
  for (const std::set<std::string>& float_nodes : float_sets) models.push_back(convert_with(float_nodes));
  std::vector<std::unique_ptr<ir::GraphModule>> bases;
  if (float_sets.size() >= kSharedPrefixTrials) {
    bases.push_back(convert_with({}));
    bases.push_back(convert_with(node_names()));
  }
  detail::SharedPrefixRuns runs(pointers(bases), pointers(models));
  std::vector<Tally> tallies(models.size());
  for (size_t i = 0; i < batches_.size(); ++i) {
    std::vector<c10::IValue> outputs = runs.run(batches_[i].inputs);
    for (size_t t = 0; t < outputs.size(); ++t) {
      tallies[t].add(output_tensor(outputs[t]), batches_[i], float_outputs_[i], metric_);
    }
  }
  if (shared_nodes != nullptr) *shared_nodes = runs.shared_fraction();
  std::vector<double> values;
  for (const Tally& tally : tallies) values.push_back(tally.value(metric_));
  return values;
}

SensitivityReport analyze_sensitivity(const QuantizationTrials& trials) {
  auto start = std::chrono::steady_clock::now();
  SensitivityReport report;
  report.metric = trials.metric();
  report.float_score = trials.float_score();
  report.float_seconds = trials.float_seconds();
  const std::set<std::string> all = trials.node_names();
  std::vector<std::set<std::string>> float_sets = {{}};  // every node quantized, then per node: only it, only it float
  for (const QuantizableNode& node : trials.nodes()) {
    std::set<std::string> others = all;
    others.erase(node.name);
    float_sets.push_back(others);
    float_sets.push_back({node.name});
  }
  std::vector<double> scores = trials.scores(float_sets, &report.shared_nodes);
  report.quantized_score = scores[0];
  for (size_t i = 0; i < trials.nodes().size(); ++i) {
    report.nodes.push_back({trials.nodes()[i], scores[1 + 2 * i], scores[2 + 2 * i]});
  }
  std::stable_sort(report.nodes.begin(), report.nodes.end(), [](const NodeSensitivity& a, const NodeSensitivity& b) {
    if (a.only_float != b.only_float) return a.only_float > b.only_float;
    return a.only_quantized < b.only_quantized;
  });
  report.seconds = seconds_since(start);
  return report;
}

nlohmann::json SensitivityReport::to_json() const {
  nlohmann::json rows = nlohmann::json::array();
  for (const NodeSensitivity& n : nodes) {
    rows.push_back({{"node", n.node.name},
                    {"op", n.node.op},
                    {"target", n.node.target},
                    {"module_type", n.node.module_type},
                    {"only_quantized", n.only_quantized},
                    {"only_float", n.only_float}});
  }
  auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return {{"metric", metric_name(metric)},
          {"float", number(float_score)},
          {"quantized", number(quantized_score)},
          {"float_seconds", float_seconds},
          {"seconds", seconds},
          {"shared_nodes", shared_nodes},
          {"nodes", rows}};
}

std::string SensitivityReport::table() const {
  const char* unit = metric == TrialMetric::kTop1 ? "%" : " dB";
  char line[512];
  std::string out;
  std::snprintf(line, sizeof(line),
                "%s: float %.2f%s, all quantized %.2f%s; %zu nodes, %zu trials in %.1f s (%.1fx one float pass, "
                "%.0f%% of their nodes shared)\n",
                metric_name(metric), float_score, unit, quantized_score, unit, nodes.size(), 2 * nodes.size() + 1,
                seconds, float_seconds > 0 ? seconds / float_seconds : 0.0, 100 * shared_nodes);
  out += line;
  std::snprintf(line, sizeof(line), "%4s  %-32s %-40s %12s %14s\n", "rank", "node", "target", "only float",
                "only quantized");
  out += line;
  int rank = 0;
  for (const NodeSensitivity& n : nodes) {
    const QuantizableNode& node = n.node;
    std::string target = node.module_type.empty()
                             ? node.target
                             : node.target + " (" + node.module_type.substr(node.module_type.rfind('.') + 1) + ")";
    std::snprintf(line, sizeof(line), "%4d  %-32s %-40s %11.2f%s %13.2f%s\n", ++rank, node.name.c_str(), target.c_str(),
                  n.only_float, unit, n.only_quantized, unit);
    out += line;
  }
  return out;
}

namespace {

bool nameable(const QuantizableNode& node) { return node.op == "call_module" || node.op == "call_function"; }

}  // namespace

std::set<std::string> FallbackResult::float_nodes() const {
  std::set<std::string> names;
  for (const FallbackStep& step : steps) names.insert(step.node.name);
  return names;
}

nlohmann::json FallbackResult::to_json() const {
  nlohmann::json rows = nlohmann::json::array();
  for (const FallbackStep& step : steps) {
    rows.push_back({{"node", step.node.name},
                    {"op", step.node.op},
                    {"target", step.node.target},
                    {"score", step.score},
                    {"gain", step.gain}});
  }
  return {
      {"float", float_score}, {"quantized", quantized_score}, {"final", score}, {"met", met}, {"float_nodes", rows}};
}

FallbackResult fall_back(const QuantizationTrials& trials, double max_drop, int64_t max_float_nodes) {
  FallbackResult result;
  result.float_score = trials.float_score();
  result.quantized_score = result.score = trials.score({});
  auto within = [&](double score) { return result.float_score - score <= max_drop; };
  result.met = within(result.score);
  if (result.met || max_float_nodes == 0) return result;
  std::vector<QuantizableNode> candidates;
  std::vector<std::set<std::string>> alone;
  for (const QuantizableNode& node : trials.nodes()) {
    if (!nameable(node)) continue;
    candidates.push_back(node);
    alone.push_back({node.name});
  }
  std::vector<double> alone_scores = trials.scores(alone);
  std::vector<std::pair<double, QuantizableNode>> ranked;  // (score with the node alone float, node)
  for (size_t i = 0; i < candidates.size(); ++i) ranked.emplace_back(alone_scores[i], candidates[i]);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::set<std::string> float_nodes;
  for (const auto& [alone, node] : ranked) {
    if (within(result.score) || static_cast<int64_t>(float_nodes.size()) == max_float_nodes) break;
    float_nodes.insert(node.name);
    double score = trials.score(float_nodes);
    if (score <= result.score) {  // verified: no gain, undone
      float_nodes.erase(node.name);
      continue;
    }
    result.steps.push_back({node, score, score - result.score});
    result.score = score;
  }
  result.met = within(result.score);
  return result;
}

quant::QConfigMapping mapping_with_float_nodes(quant::QConfigMapping mapping, const ir::GraphModule& calibrated,
                                               const std::set<std::string>& float_nodes) {
  std::map<std::pair<std::string, std::string>, int64_t> next_index;  // (scope, function) -> calls so far
  for (const ir::Node* node : calibrated.graph().nodes()) {
    if (node->op() == ir::Opcode::kCallFunction) {
      ir::NodeScope scope = ir::node_scope(*node);
      int64_t index = next_index[{scope.module_path, node->target()}]++;
      if (float_nodes.count(node->name()) > 0) {
        mapping.set_module_name_object_type_order(scope.module_path, node->target(), index, std::nullopt);
      }
    } else if (node->op() == ir::Opcode::kCallModule && float_nodes.count(node->name()) > 0) {
      mapping.set_module_name(node->target(), std::nullopt);
    } else {
      TORCH_CHECK(float_nodes.count(node->name()) == 0, "node ", node->name(),
                  " cannot be left float by a QConfigMapping entry of its own");
    }
  }
  return mapping;
}

}  // namespace qfx
