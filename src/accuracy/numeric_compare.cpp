// Per-layer comparison of a float model and a quantized one: activation
// sources (interpreter, TorchScript), name matching, error sums.

#include "qfx/accuracy/numeric_compare.h"

#include "qfx/io/torchscript_import.h"
#include "qfx/ir/graph.h"
#include "qfx/ir/interpreter.h"
#include "qfx/ir/module_registry.h"
#include "qfx/ir/node.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_map>

namespace qfx {
namespace {

/// The first tensor of a model output (a tensor, or a tuple or list of them).
at::Tensor first_tensor(const c10::IValue& value) {
  if (value.isTensor()) return value.toTensor();
  if (value.isTuple()) {
    for (const c10::IValue& item : value.toTupleRef().elements()) {
      if (at::Tensor t = first_tensor(item); t.defined()) return t;
    }
  }
  if (value.isList()) {
    for (const c10::IValue& item : value.toListRef()) {
      if (at::Tensor t = first_tensor(item); t.defined()) return t;
    }
  }
  return {};
}

std::vector<std::string> lookup(const std::unordered_map<std::string, std::vector<std::string>>& map,
                                const std::string& key) {
  auto it = map.find(key);
  return it != map.end() ? it->second : std::vector<std::string>();
}

bool is_compute(const ir::Node& node) {
  return node.op() == ir::Opcode::kCallModule || node.op() == ir::Opcode::kCallFunction ||
         node.op() == ir::Opcode::kCallMethod;
}

class GraphActivations : public ActivationSource {
 public:
  explicit GraphActivations(const ir::GraphModule& model) : interpreter_(model) {
    for (const ir::Node* node : model.graph().nodes()) {
      if (!is_compute(*node)) continue;
      names_.push_back(node->name());
      for (const ir::Node* input : node->input_nodes()) inputs_[node->name()].push_back(input->name());
    }
  }
  std::vector<std::string> names() const override { return names_; }
  std::vector<std::string> inputs_of(const std::string& name) const override { return lookup(inputs_, name); }
  void run(const std::vector<c10::IValue>& inputs, const std::vector<std::string>& wanted,
           std::vector<at::Tensor>& logged, at::Tensor& output) override {
    std::unordered_map<std::string, size_t> slot;
    for (size_t i = 0; i < wanted.size(); ++i) slot.emplace(wanted[i], i);
    logged.assign(wanted.size(), at::Tensor());
    interpreter_.set_node_hook([&](const ir::Node& node, const c10::IValue& value) {
      auto it = slot.find(node.name());
      if (it != slot.end() && value.isTensor()) logged[it->second] = value.toTensor();
    });
    output = first_tensor(interpreter_.run(inputs));
  }

 private:
  ir::Interpreter interpreter_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, std::vector<std::string>> inputs_;
};

/// `conv1.1` -> `conv1`: TorchScript's debug names carry a version suffix.
std::string base_name(const std::string& debug_name) {
  size_t dot = debug_name.rfind('.');
  if (dot == std::string::npos || dot + 1 == debug_name.size()) return debug_name;
  for (size_t i = dot + 1; i < debug_name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(debug_name[i]))) return debug_name;
  }
  return debug_name.substr(0, dot);
}

/// The node name a TorchScript value stands for: its debug name without the
/// version suffix; a submodule call `attn = self.attn.forward(x)`, which
/// TorchScript names `attn0` beside the module's own `attn`, as `attn`.
std::string node_name(const torch::jit::Value& value) {
  std::string name = base_name(value.debugName());
  const torch::jit::Node& node = *value.node();
  if (node.kind() != c10::prim::CallMethod || node.inputs().empty()) return name;
  const torch::jit::Node& module = *node.input(0)->node();
  if (module.kind() != c10::prim::GetAttr) return name;
  const std::string& attribute = module.s(c10::attr::name);
  bool numbered = name.size() > attribute.size() && name.compare(0, attribute.size(), attribute) == 0 &&
                  std::all_of(name.begin() + static_cast<std::ptrdiff_t>(attribute.size()), name.end(),
                              [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
  return numbered ? attribute : name;
}

bool is_tensor(const torch::jit::Value& value) { return value.type()->kind() == c10::TypeKind::TensorType; }

class ScriptActivations : public ActivationSource {
 public:
  explicit ScriptActivations(const std::string& path) : module_(io::load_script(path)) {
    module_.eval();
    graph_ = module_.get_method("forward").graph()->copy();
    std::set<std::string> seen;
    for (torch::jit::Node* node : graph_->nodes()) {
      for (torch::jit::Value* value : node->outputs()) {
        if (!value->hasDebugName() || !is_tensor(*value)) continue;
        std::string name = node_name(*value);
        if (!seen.insert(name).second) continue;
        names_.push_back(name);
        for (torch::jit::Value* input : node->inputs()) {
          if (input->hasDebugName()) inputs_[name].push_back(node_name(*input));
        }
      }
    }
  }
  std::vector<std::string> names() const override { return names_; }
  std::vector<std::string> inputs_of(const std::string& name) const override { return lookup(inputs_, name); }
  void run(const std::vector<c10::IValue>& inputs, const std::vector<std::string>& wanted,
           std::vector<at::Tensor>& logged, at::Tensor& output) override {
    if (function_ == nullptr || wanted != wanted_) compile(wanted);
    std::vector<c10::IValue> stack{module_._ivalue()};
    stack.insert(stack.end(), inputs.begin(), inputs.end());
    auto results = (*function_)(std::move(stack)).toTupleRef().elements();
    output = first_tensor(results[0]);
    logged.assign(wanted.size(), at::Tensor());
    for (size_t i = 0; i < slots_.size(); ++i) logged[slots_[i]] = results[i + 1].toTensor();
  }

 private:
  /// A function returning (output, the wanted values that exist...).
  void compile(const std::vector<std::string>& wanted) {
    auto graph = graph_->copy();
    std::unordered_map<std::string, torch::jit::Value*> by_name;
    for (torch::jit::Node* node : graph->nodes()) {
      for (torch::jit::Value* value : node->outputs()) {
        if (value->hasDebugName() && is_tensor(*value)) by_name.emplace(node_name(*value), value);
      }
    }
    std::vector<torch::jit::Value*> outputs{graph->outputs()[0]};
    slots_.clear();
    for (size_t i = 0; i < wanted.size(); ++i) {
      auto it = by_name.find(wanted[i]);
      if (it == by_name.end()) continue;
      outputs.push_back(it->second);
      slots_.push_back(i);
    }
    torch::jit::Node* tuple = graph->appendNode(graph->createTuple(outputs));
    graph->eraseOutput(0);
    graph->registerOutput(tuple->output());
    function_ = std::make_unique<torch::jit::GraphFunction>("qfx_compare", graph, nullptr);
    wanted_ = wanted;
  }

  torch::jit::Module module_;
  std::shared_ptr<torch::jit::Graph> graph_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, std::vector<std::string>> inputs_;
  std::unique_ptr<torch::jit::GraphFunction> function_;
  std::vector<std::string> wanted_;
  std::vector<size_t> slots_;  // per returned value after the output: its index in `wanted_`
};

/// What a node computes: its module's type, or its function or method.
std::string op_of(const ir::GraphModule& gm, const ir::Node& node) {
  return node.op() == ir::Opcode::kCallModule ? ir::module_type_name(*gm.get_submodule(node.target())) : node.target();
}

/// A batch norm or relu (`t` from op_of): what fusion absorbs into the op before it.
bool is_fused_tail(const std::string& t) {
  return t.find("BatchNorm") != std::string::npos || t.find("batch_norm") != std::string::npos ||
         t.find("relu") != std::string::npos || t.find("ReLU") != std::string::npos;
}

/// Finds the float node each quantized value is compared with.
class NodeMatcher {
 public:
  NodeMatcher(const ir::GraphModule& float_model, const ActivationSource& quantized)
      : float_model_(float_model), quantized_(quantized) {
    for (const std::string& name : quantized.names()) present_.insert(name);
    for (const ir::Node* node : float_model.graph().nodes()) {
      if (is_compute(*node)) by_name_.emplace(node->name(), node);
    }
  }

  /// The float node `name` is compared with, or nullptr.
  const ir::Node* match(const std::string& name) {
    auto it = by_name_.find(name);
    const ir::Node* start = it != by_name_.end() ? it->second : renamed(name);
    if (start == nullptr) return nullptr;
    const ir::Node* end = start;
    while (end->users().size() == 1 && is_compute(*end->users()[0]) &&
           is_fused_tail(op_of(float_model_, *end->users()[0])) && present_.count(end->users()[0]->name()) == 0) {
      end = end->users()[0];
    }
    ends_[name] = end;
    return end;
  }

 private:
  /// A quantized node with a new name: the one float node absent from the
  /// quantized model whose inputs include the float ends of all its matched inputs.
  const ir::Node* renamed(const std::string& name) const {
    std::vector<const ir::Node*> ends;
    for (const std::string& input : quantized_.inputs_of(name)) {
      auto it = ends_.find(input);
      if (it != ends_.end()) ends.push_back(it->second);
    }
    if (ends.empty()) return nullptr;
    const ir::Node* found = nullptr;
    for (const ir::Node* user : ends[0]->users()) {
      if (!is_compute(*user) || present_.count(user->name()) > 0) continue;
      std::vector<ir::Node*> inputs = user->input_nodes();
      bool reads_all = std::all_of(ends.begin(), ends.end(), [&](const ir::Node* e) {
        return std::find(inputs.begin(), inputs.end(), e) != inputs.end();
      });
      if (!reads_all) continue;
      if (found != nullptr) return nullptr;  // ambiguous
      found = user;
    }
    return found;
  }

  const ir::GraphModule& float_model_;
  const ActivationSource& quantized_;
  std::set<std::string> present_;
  std::unordered_map<std::string, const ir::Node*> by_name_;
  std::unordered_map<std::string, const ir::Node*> ends_;  // matched quantized name -> float end
};

std::string sizes_of(const at::Tensor& t) {
  std::string out = "[";
  for (int64_t i = 0; i < t.dim(); ++i) out += (i ? ", " : "") + std::to_string(t.size(i));
  return out + "]";
}

nlohmann::json layer_json(const LayerError& layer) {
  double sqnr = layer.sqnr_db();
  nlohmann::json out = {
      {"name", layer.name}, {"float_node", layer.float_node}, {"op", layer.op}, {"target", layer.target}};
  if (!layer.module_type.empty()) out["module_type"] = layer.module_type;
  out.update({{"sqnr_db", std::isfinite(sqnr) ? nlohmann::json(sqnr) : nlohmann::json()},
              {"normalized_l2", layer.normalized_l2()},
              {"cosine", layer.cosine()},
              {"numel", layer.numel}});
  return out;
}

}  // namespace

void LayerError::add(const at::Tensor& reference, const at::Tensor& quantized) {
  at::Tensor x = (reference.is_quantized() ? reference.dequantize() : reference).to(at::kDouble);
  at::Tensor y = (quantized.is_quantized() ? quantized.dequantize() : quantized).to(at::kDouble);
  TORCH_CHECK(x.sizes() == y.sizes(), "compare: '", name, "' is ", sizes_of(y), " in the quantized model but '",
              float_node, "' is ", sizes_of(x), " in the float model");
  numel += x.numel();
  float_sq += x.square().sum().item<double>();
  quant_sq += y.square().sum().item<double>();
  dot += (x * y).sum().item<double>();
  error_sq += (x - y).square().sum().item<double>();
}

double LayerError::sqnr_db() const {
  if (error_sq == 0) return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(float_sq / error_sq);
}

double LayerError::normalized_l2() const { return float_sq > 0 ? std::sqrt(error_sq / float_sq) : 0.0; }

double LayerError::cosine() const {
  double norms = std::sqrt(float_sq) * std::sqrt(quant_sq);
  return norms > 0 ? dot / norms : 0.0;
}

std::unique_ptr<ActivationSource> graph_activations(const ir::GraphModule& model) {
  return std::make_unique<GraphActivations>(model);
}

std::unique_ptr<ActivationSource> script_activations(const std::string& path) {
  return std::make_unique<ScriptActivations>(path);
}

NumericComparison::NumericComparison(const ir::GraphModule& float_model, std::unique_ptr<ActivationSource> quantized)
    : quantized_(std::move(quantized)), float_(graph_activations(float_model)) {
  NodeMatcher matcher(float_model, *quantized_);
  for (const std::string& name : quantized_->names()) {
    const ir::Node* end = matcher.match(name);
    if (end == nullptr) continue;
    LayerError layer;
    layer.name = name;
    layer.float_node = end->name();
    layer.op = ir::opcode_name(end->op());
    layer.target = end->target();
    if (end->op() == ir::Opcode::kCallModule) layer.module_type = op_of(float_model, *end);
    layers_.push_back(layer);
    quant_names_.push_back(name);
    float_names_.push_back(end->name());
  }
  TORCH_CHECK(!layers_.empty(),
              "compare: no node of the float model has a match in the quantized model "
              "(was it made from this float model?)");
  output_.name = output_.float_node = "output";
  output_.op = output_.target = "output";
}

NumericComparison::NumericComparison(const ir::GraphModule& float_model, const std::string& quantized_path)
    : NumericComparison(float_model, script_activations(quantized_path)) {}

NumericComparison::~NumericComparison() = default;

void NumericComparison::add(const std::vector<c10::IValue>& inputs) {
  c10::InferenceMode no_autograd;
  std::vector<at::Tensor> reference, quantized;
  at::Tensor reference_out, quantized_out;
  float_->run(inputs, float_names_, reference, reference_out);
  quantized_->run(inputs, quant_names_, quantized, quantized_out);
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (reference[i].defined() && quantized[i].defined()) layers_[i].add(reference[i], quantized[i]);
  }
  TORCH_CHECK(reference_out.defined() && quantized_out.defined(), "compare: a model output is not a tensor");
  output_.add(reference_out, quantized_out);
  ++batches_;
}

nlohmann::json NumericComparison::to_json() const {
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerError& layer : layers_) {
    if (layer.numel > 0) layers.push_back(layer_json(layer));  // logged in no batch: not a tensor in one model
  }
  return {{"batches", batches_}, {"layers", layers}, {"output", layer_json(output_)}};
}

}  // namespace qfx
