// Leaf probing: the leaf's forward() is walked with a handler that records
// every op instead of building nodes, and then the leaf table's builder for
// the module's class turns the recorded ops into a module.

#include "leaf_modules.h"

#include <algorithm>

#include "script_reader.h"
#include "walker.h"

#include <c10/util/Exception.h>
#include <torch/autograd.h>

#include <unordered_map>

namespace qfx::io::detail {
namespace {

class Probe : public Walker::Handler {
 public:
  Probe() : walker_(*this) {}

  std::vector<ProbedOp> run(const torch::jit::Module& module, const std::string& path, const std::string& method) {
    const torch::jit::Function& forward = module.get_method(method).function();
    const torch::jit::Graph& graph = *module.get_method(method).graph();
    std::vector<ImportValue> inputs(graph.inputs().size());  // the data inputs stay opaque ...
    inputs[0] = ImportValue::of_module(path, module);
    const auto& schema = forward.getSchema().arguments();
    for (size_t i = 1; i < inputs.size() && i < schema.size(); ++i) {
      // ... but for optional ones, taken as not given (ConvTranspose's output_size=None)
      if (schema[i].default_value() && schema[i].default_value()->isNone()) inputs[i] = ImportValue::of_static({});
    }
    walker_.run(graph, std::move(inputs));
    return std::move(ops_);
  }
  ImportValue call_module(const ImportValue& module, const std::string& method,
                          std::vector<ImportValue> args) override {
    std::vector<ImportValue> inputs{module};
    for (auto& a : args) inputs.push_back(std::move(a));
    return walker_.run(*module.module->get_method(method).graph(), std::move(inputs)).at(0);
  }
  std::vector<ImportValue> call_op(const torch::jit::Node& node, std::vector<ImportValue> inputs) override {
    std::vector<c10::optional<c10::IValue>> constants;
    for (const ImportValue& v : inputs)
      constants.push_back(v.is_static() ? c10::make_optional(v.constant) : c10::nullopt);
    std::vector<std::string> names;
    if (const c10::FunctionSchema* schema = node.maybeSchema()) {
      for (const c10::Argument& a : schema->arguments()) names.push_back(a.name());
    }
    ops_.push_back({node.kind().toQualString(), std::move(names), std::move(constants)});
    return std::vector<ImportValue>(node.outputs().size());
  }
  ImportValue element(const ImportValue&, int64_t) override { return ImportValue::opaque(); }
  bool tolerate_dynamic_control() const override { return true; }

 private:
  Walker walker_;
  std::vector<ProbedOp> ops_;
};

}  // namespace

namespace {

/// The position of argument `name` in `op`'s inputs, or inputs.size().
size_t position(const ProbedOp& op, const std::string& name) {
  size_t i = static_cast<size_t>(std::find(op.names.begin(), op.names.end(), name) - op.names.begin());
  return i < op.inputs.size() ? i : op.inputs.size();
}

const c10::IValue& typed(const ProbedOp& op, const std::string& name, bool ok, const char* what) {
  TORCH_CHECK(ok, op.kind, ": argument '", name, "' is a ", op.constant(name).tagKind(), ", not ", what);
  return op.constant(name);
}

}  // namespace

bool ProbedOp::has(const std::string& name) const { return position(*this, name) < inputs.size(); }

const c10::IValue& ProbedOp::constant(const std::string& name) const {
  size_t i = position(*this, name);
  TORCH_CHECK(i < inputs.size() && inputs[i], kind, ": argument '", name, "' is not a constant");
  return *inputs[i];
}

int64_t ProbedOp::to_int(const std::string& name) const {
  return typed(*this, name, constant(name).isInt(), "an int").toInt();
}
double ProbedOp::to_double(const std::string& name) const {
  return typed(*this, name, constant(name).isScalar(), "a number").toScalar().toDouble();
}
bool ProbedOp::to_bool(const std::string& name) const {
  return typed(*this, name, constant(name).isBool(), "a bool").toBool();
}
std::vector<int64_t> ProbedOp::ints(const std::string& name) const {
  return typed(*this, name, constant(name).isIntList(), "a list of ints").toIntVector();
}
bool ProbedOp::is_none(const std::string& name) const {
  size_t i = position(*this, name);
  return i < inputs.size() && inputs[i] && inputs[i]->isNone();
}

const ProbedOp* Leaf::find_op(const std::vector<std::string>& kinds) const {
  for (const ProbedOp& op : ops_) {
    for (const std::string& k : kinds) {
      if (op.kind == k) return &op;
    }
  }
  return nullptr;
}

const ProbedOp& Leaf::op(const std::vector<std::string>& kinds) const {
  const ProbedOp* op = find_op(kinds);
  std::string names;
  for (const auto& k : kinds) names += (names.empty() ? "" : " or ") + k;
  TORCH_CHECK(op != nullptr, "its forward() has no ", names);
  return *op;
}

namespace {

at::Tensor module_tensor(const torch::jit::Module& module, const std::string& name) {
  if (!module.hasattr(name)) return {};
  c10::IValue v = module.attr(name);
  return v.isTensor() ? v.toTensor() : at::Tensor();
}

c10::optional<int64_t> module_int(const torch::jit::Module& module, const std::string& name) {
  if (module.hasattr(name) && module.attr(name).isInt()) return module.attr(name).toInt();
  auto slot = module.type()->findConstantSlot(name);
  if (slot && module.type()->getConstant(*slot).isInt()) return module.type()->getConstant(*slot).toInt();
  return c10::nullopt;
}

}  // namespace

void assign(at::Tensor& target, const at::Tensor& source) {
  torch::NoGradGuard no_grad;
  TORCH_CHECK(target.sizes() == source.sizes(), "shape ", source.sizes(), " does not fit ", target.sizes());
  target.copy_(source);
}

namespace {

/// The leaf table by Python class, qualified and public (qfx's exports: torch.nn.Conv2d).
const std::unordered_map<std::string, LeafBuilder>& leaf_table() {
  static const auto kTable = [] {
    std::unordered_map<std::string, LeafBuilder> table;
    for (const auto* rows : {&weighted_leaf_rows(), &simple_leaf_rows(), &rnn_leaf_rows()}) {
      for (const LeafRow& row : *rows) {
        table.emplace(row.python_class, row.build);
        table.emplace(public_type_name(row.python_class), row.build);
      }
    }
    return table;
  }();
  return kTable;
}

}  // namespace

bool has_leaf_form(const std::string& python_class) { return leaf_table().count(python_class) != 0; }

std::shared_ptr<torch::nn::Module> build_leaf_module(const Leaf& leaf, const std::string& python_class,
                                                     const std::string& path) {
  auto it = leaf_table().find(python_class);
  if (it == leaf_table().end()) return nullptr;
  std::shared_ptr<torch::nn::Module> built;
  try {
    built = it->second(leaf);
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, "import: cannot read ", python_class, " in module '", path, "': ", e.what_without_backtrace());
  }
  built->train(leaf.is_training());
  return built;
}

std::shared_ptr<torch::nn::Module> build_leaf_module(const torch::jit::Module& module, const std::string& python_class,
                                                     const std::string& path, const std::string& method) {
  if (!has_leaf_form(python_class)) return nullptr;  // no probe walk for a module qfx keeps as TorchScript
  Probe probe;
  Leaf leaf(
      probe.run(module, path, method), [&module](const std::string& name) { return module_tensor(module, name); },
      [&module](const std::string& name) { return module_int(module, name); }, module.is_training());
  return build_leaf_module(leaf, python_class, path);
}

}  // namespace qfx::io::detail
