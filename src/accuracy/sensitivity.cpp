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
                                       Convert convert, TrialMetric metric, std::vector<LabelledBatch> batches,
                                       Convert to_reference)
    : calibrated_(calibrated),
      convert_(std::move(convert)),
      to_reference_(std::move(to_reference)),
      metric_(metric),
      batches_(std::move(batches)) {
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
  trials_run_ += static_cast<int64_t>(models.size());
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

// Kernel gaps need few batches: a wrong kernel is wrong on any input.
constexpr size_t kKernelGapBatches = 4;

const std::map<std::string, KernelGap>& QuantizationTrials::kernel_gaps() const {
  TORCH_CHECK(has_reference(), "kernel gaps need the trials' convert_to_reference_fx");
  if (kernel_gaps_) return *kernel_gaps_;
  std::unique_ptr<ir::GraphModule> reference = calibrated_.deep_copy();
  to_reference_(*reference);
  std::unique_ptr<ir::GraphModule> lowered = convert_with({});
  std::vector<std::vector<c10::IValue>> inputs;
  for (size_t i = 0; i < std::min(batches_.size(), kKernelGapBatches); ++i) inputs.push_back(batches_[i].inputs);
  kernel_gaps_.emplace();
  for (const KernelGap& gap : qfx::kernel_gaps(*reference, *lowered, inputs)) kernel_gaps_->emplace(gap.node, gap);
  return *kernel_gaps_;
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
    NodeSensitivity n{trials.nodes()[i], scores[1 + 2 * i], scores[2 + 2 * i]};
    if (trials.has_reference()) {
      auto gap = trials.kernel_gaps().find(n.node.name);
      if (gap != trials.kernel_gaps().end()) n.kernel_gap = gap->second.steps;
    }
    report.nodes.push_back(n);
  }
  std::stable_sort(report.nodes.begin(), report.nodes.end(), [](const NodeSensitivity& a, const NodeSensitivity& b) {
    if (a.kernel_fault() != b.kernel_fault()) return a.kernel_fault();
    if (a.kernel_fault() && a.kernel_gap != b.kernel_gap) return a.kernel_gap > b.kernel_gap;
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
                    {"only_float", n.only_float},
                    {"kernel_gap_steps", n.kernel_gap},
                    {"kernel_fault", n.kernel_fault()}});
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
  std::snprintf(line, sizeof(line), "%4s  %-32s %-40s %12s %14s  %s\n", "rank", "node", "target", "only float",
                "only quantized", "kernel gap");
  out += line;
  int rank = 0;
  for (const NodeSensitivity& n : nodes) {
    const QuantizableNode& node = n.node;
    std::string target = node.module_type.empty()
                             ? node.target
                             : node.target + " (" + node.module_type.substr(node.module_type.rfind('.') + 1) + ")";
    std::string gap = n.kernel_gap < 0 ? "-" : std::to_string(n.kernel_gap) + (n.kernel_gap == 1 ? " step" : " steps");
    if (n.kernel_fault()) gap += ": kernel fault";
    std::snprintf(line, sizeof(line), "%4d  %-32s %-40s %11.2f%s %13.2f%s  %s\n", ++rank, node.name.c_str(),
                  target.c_str(), n.only_float, unit, n.only_quantized, unit, gap.c_str());
    out += line;
  }
  return out;
}

}  // namespace qfx
