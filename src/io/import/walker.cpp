// Walker: abstract evaluation of TorchScript graphs. Each node kind is a row
// of the visitor table; any other node is folded when its inputs are constants
// and its outputs hold no tensor, and otherwise goes to Handler::call_op.

#include "walker.h"

#include <ATen/core/function.h>
#include <c10/util/Exception.h>
#include <algorithm>
#include <torch/csrc/jit/api/function_impl.h>

namespace qfx::io::detail {
namespace {

bool holds_tensor(const c10::TypePtr& type) {
  if (type->kind() == c10::TypeKind::TensorType) return true;
  for (const auto& contained : type->containedTypes()) {
    if (holds_tensor(contained)) return true;
  }
  return false;
}

c10::IValue make_list(const c10::TypePtr& type, std::vector<c10::IValue> items) {
  c10::impl::GenericList list(type->expectRef<c10::ListType>().getElementType());
  for (auto& item : items) list.push_back(std::move(item));
  return list;
}

std::vector<c10::IValue> static_items(const c10::IValue& v) {
  if (v.isList()) return v.toListRef().vec();
  TORCH_CHECK(v.isTuple(), "import: indexing a constant ", v.tagKind());
  return v.toTupleRef().elements().vec();
}

bool is_module_object(const c10::IValue& v) { return v.isObject() && v.toObjectRef().type()->is_module(); }

}  // namespace

std::string source_location(const torch::jit::Node& node) {
  const torch::jit::SourceRange& range = node.sourceRange();
  c10::optional<torch::jit::SourceRange> original = range.findSourceRangeThatGenerated();
  const torch::jit::SourceRange& r = original ? *original : range;
  if (r.source() == nullptr) return "";
  auto file_line = r.file_line_col();
  if (file_line && !std::get<0>(*file_line).empty()) {
    return std::get<0>(*file_line) + ":" + std::to_string(std::get<1>(*file_line));
  }
  // Traced graphs keep a Python stack as text: its first line names the frame.
  std::string text = r.text().str();
  return text.substr(0, text.find('\n'));
}

const std::unordered_map<std::string, Walker::Visit>& Walker::visitors() {
  static const std::unordered_map<std::string, Visit> kVisitors = {
      {"prim::Constant", &Walker::visit_constant},
      {"prim::GetAttr", &Walker::visit_get_attr},
      {"prim::CallMethod", &Walker::visit_call_method},
      {"prim::CallFunction", &Walker::visit_call_function},
      {"prim::ListConstruct", &Walker::visit_construct},
      {"prim::TupleConstruct", &Walker::visit_construct},
      {"prim::ListUnpack", &Walker::visit_unpack},
      {"prim::TupleUnpack", &Walker::visit_unpack},
      {"prim::TupleIndex", &Walker::visit_index},
      {"aten::__getitem__", &Walker::visit_index},
      {"prim::If", &Walker::visit_if},
      {"prim::Loop", &Walker::visit_loop},
      {"prim::NumToTensor", &Walker::visit_pass_through},
      {"aten::Int", &Walker::visit_pass_through},
      {"aten::Float", &Walker::visit_pass_through},
      {"aten::ScalarImplicit", &Walker::visit_pass_through},
      {"aten::Bool", &Walker::visit_pass_through},
      {"prim::unchecked_cast", &Walker::visit_pass_through},
      {"aten::__is__", &Walker::visit_identity_test},
      {"aten::__isnot__", &Walker::visit_identity_test},
      {"prim::RaiseException", &Walker::visit_raise},
      {"aten::warn", &Walker::visit_warn},
      {"prim::Uninitialized", &Walker::visit_uninitialized},
  };
  return kVisitors;
}

std::string Walker::where() const {
  std::string path = module_stack_.empty() ? "" : module_stack_.back();
  std::string out = path.empty() ? "in the root module" : "in module '" + path + "'";
  if (current_ != nullptr) {
    std::string loc = source_location(*current_);
    if (!loc.empty()) out += " (" + loc + ")";
  }
  return out;
}

void Walker::fail(const std::string& what) const { TORCH_CHECK(false, "import: ", what, " ", where()); }

std::vector<ImportValue> Walker::run(const torch::jit::Graph& graph, std::vector<ImportValue> inputs) {
  TORCH_CHECK(!inputs.empty() && inputs[0].kind == ImportValue::Kind::kModule,
              "import: a method graph needs its module as first input");
  module_stack_.push_back(inputs[0].path);
  Env env;
  auto outputs = run_block(*graph.block(), std::move(inputs), env);
  module_stack_.pop_back();
  return outputs;
}

std::vector<ImportValue> Walker::run_block(const torch::jit::Block& block, std::vector<ImportValue> inputs, Env& env) {
  TORCH_CHECK(block.inputs().size() == inputs.size(), "import: block takes ", block.inputs().size(), " inputs, got ",
              inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) env[block.inputs()[i]] = std::move(inputs[i]);
  for (const torch::jit::Node* node : block.nodes()) {
    const torch::jit::Node* saved = current_;
    current_ = node;
    visit(*node, env);
    current_ = saved;
  }
  std::vector<ImportValue> outputs;
  for (const torch::jit::Value* v : block.outputs()) outputs.push_back(env.at(v));
  return outputs;
}

std::vector<ImportValue> Walker::inputs_of(const torch::jit::Node& node, const Env& env) const {
  std::vector<ImportValue> inputs;
  for (const torch::jit::Value* v : node.inputs()) {
    auto it = env.find(v);
    if (it == env.end()) fail("internal: value %" + v->debugName() + " used before definition");
    inputs.push_back(it->second);
  }
  return inputs;
}

void Walker::bind_outputs(const torch::jit::Node& node, std::vector<ImportValue> values, Env& env) {
  if (values.size() != node.outputs().size()) {
    fail(std::string(node.kind().toQualString()) + " gave " + std::to_string(values.size()) + " values for " +
         std::to_string(node.outputs().size()) + " outputs");
  }
  for (size_t i = 0; i < values.size(); ++i) env[node.outputs()[i]] = std::move(values[i]);
}

void Walker::visit(const torch::jit::Node& node, Env& env) {
  auto it = visitors().find(node.kind().toQualString());
  if (it != visitors().end()) {
    (this->*(it->second))(node, env);
    return;
  }
  std::vector<ImportValue> inputs = inputs_of(node, env);
  if (try_fold(node, inputs, env) || try_concat(node, inputs, env)) return;
  bind_outputs(node, handler_.call_op(node, std::move(inputs)), env);
}

bool Walker::try_concat(const torch::jit::Node& node, const std::vector<ImportValue>& inputs, Env& env) {
  // `[a] + [b]` of lists the walk built: Python joins them while FX traces
  using Kind = ImportValue::Kind;
  if (node.kind() != c10::aten::add || inputs.size() != 2 || inputs[0].kind != Kind::kList ||
      inputs[1].kind != Kind::kList) {
    return false;
  }
  std::vector<ImportValue> items = inputs[0].items;
  items.insert(items.end(), inputs[1].items.begin(), inputs[1].items.end());
  bind_outputs(node, {ImportValue::of_sequence(Kind::kList, std::move(items))}, env);
  return true;
}

bool Walker::try_fold(const torch::jit::Node& node, const std::vector<ImportValue>& inputs, Env& env) {
  for (const ImportValue& v : inputs) {
    if (!v.is_static() || v.constant.isTensor()) return false;
  }
  for (const torch::jit::Value* out : node.outputs()) {
    if (holds_tensor(out->type())) return false;
  }
  if (node.maybeOperator() == nullptr) return false;
  torch::jit::Stack stack;
  for (const ImportValue& v : inputs) stack.push_back(v.constant);
  try {
    node.getOperation()(stack);
  } catch (const std::exception& e) {
    if (handler_.tolerate_dynamic_control()) return false;  // probing a branch never taken: an opaque value
    std::string what = e.what();
    fail(std::string(node.kind().toQualString()) + " on constants fails: " + what.substr(0, what.find('\n')));
  }
  std::vector<ImportValue> outputs;
  for (c10::IValue& v : stack) outputs.push_back(ImportValue::of_static(std::move(v)));
  bind_outputs(node, std::move(outputs), env);
  return true;
}

void Walker::visit_constant(const torch::jit::Node& node, Env& env) {
  if (node.output()->type()->kind() == c10::TypeKind::FunctionType) {
    env[node.output()] = ImportValue::opaque();  // prim::CallFunction reads the callee from the type
    return;
  }
  c10::optional<c10::IValue> value = torch::jit::toIValue(node.output());
  if (!value) fail("constant of an unsupported type");
  env[node.output()] = ImportValue::of_static(*value);
}

void Walker::visit_get_attr(const torch::jit::Node& node, Env& env) {
  ImportValue owner = env.at(node.input());
  const std::string name = node.s(c10::attr::name);
  if (owner.kind != ImportValue::Kind::kModule) fail("attribute '" + name + "' of a non-module value");
  c10::IValue attr = owner.module->attr(name);
  std::string path = join_path(owner.path, name);
  if (is_module_object(attr)) {
    env[node.output()] = ImportValue::of_module(path, torch::jit::Module(attr.toObject()));
  } else if (attr.isTensor()) {
    env[node.output()] = ImportValue::of_attr(path, attr.toTensor());
  } else {
    env[node.output()] = ImportValue::of_static(attr);
  }
}

void Walker::visit_call_method(const torch::jit::Node& node, Env& env) {
  std::vector<ImportValue> inputs = inputs_of(node, env);
  if (inputs[0].kind != ImportValue::Kind::kModule) fail("method call on a non-module value");
  ImportValue module = inputs[0];
  inputs.erase(inputs.begin());
  module_stack_.push_back(module.path);
  ImportValue result = handler_.call_module(module, node.s(c10::attr::name), std::move(inputs));
  module_stack_.pop_back();
  bind_outputs(node, {std::move(result)}, env);
}

void Walker::visit_call_function(const torch::jit::Node& node, Env& env) {
  auto fn_type = node.input(0)->type()->cast<c10::FunctionType>();
  if (!fn_type) fail("call of a non-function value");
  torch::jit::Function* fn = fn_type->function();
  std::vector<ImportValue> inputs = inputs_of(node, env);
  inputs.erase(inputs.begin());
  std::string name = python_qualified_name(fn->qualname().qualifiedName());
  if (auto result = handler_.call_function(name, fn->getSchema(), inputs)) {
    bind_outputs(node, {std::move(*result)}, env);
    return;
  }
  Env callee_env;
  auto outputs = run_block(*torch::jit::toGraphFunction(*fn).graph()->block(), std::move(inputs), callee_env);
  bind_outputs(node, std::move(outputs), env);
}

void Walker::visit_construct(const torch::jit::Node& node, Env& env) {
  std::vector<ImportValue> inputs = inputs_of(node, env);
  bool is_list = node.kind() == c10::prim::ListConstruct;
  bool all_static = std::all_of(inputs.begin(), inputs.end(), [](const ImportValue& v) { return v.is_static(); });
  if (all_static) {
    std::vector<c10::IValue> items;
    for (const ImportValue& v : inputs) items.push_back(v.constant);
    env[node.output()] = ImportValue::of_static(is_list ? make_list(node.output()->type(), std::move(items))
                                                        : c10::ivalue::Tuple::create(std::move(items)));
    return;
  }
  env[node.output()] =
      ImportValue::of_sequence(is_list ? ImportValue::Kind::kList : ImportValue::Kind::kTuple, std::move(inputs));
}

void Walker::visit_unpack(const torch::jit::Node& node, Env& env) {
  ImportValue seq = env.at(node.input(0));
  std::vector<ImportValue> outputs;
  size_t n = node.outputs().size();
  for (size_t i = 0; i < n; ++i) {
    if (seq.kind == ImportValue::Kind::kList || seq.kind == ImportValue::Kind::kTuple) {
      outputs.push_back(seq.items.at(i));
    } else if (seq.is_static()) {
      outputs.push_back(ImportValue::of_static(static_items(seq.constant).at(i)));
    } else {
      outputs.push_back(handler_.element(seq, static_cast<int64_t>(i)));
    }
  }
  bind_outputs(node, std::move(outputs), env);
}

void Walker::visit_index(const torch::jit::Node& node, Env& env) {
  std::vector<ImportValue> inputs = inputs_of(node, env);
  if (try_fold(node, inputs, env)) return;
  const ImportValue& seq = inputs[0];
  if (!inputs[1].is_static() || !inputs[1].constant.isInt()) {
    bind_outputs(node, handler_.call_op(node, std::move(inputs)), env);
    return;
  }
  int64_t index = inputs[1].constant.toInt();
  if (seq.kind == ImportValue::Kind::kList || seq.kind == ImportValue::Kind::kTuple) {
    int64_t n = static_cast<int64_t>(seq.items.size());
    env[node.output()] = seq.items.at(index < 0 ? index + n : index);
  } else if (seq.is_static()) {
    auto items = static_items(seq.constant);
    int64_t n = static_cast<int64_t>(items.size());
    env[node.output()] = ImportValue::of_static(items.at(index < 0 ? index + n : index));
  } else {
    env[node.output()] = handler_.element(seq, index);
  }
}

namespace {

/// The message of `torch._assert(cond, message)` as TorchScript compiles it
/// (an `if` without outputs whose else branch only raises), or nullopt.
c10::optional<std::string> assertion_message(const torch::jit::Node& node) {
  if (!node.outputs().empty() || node.blocks().size() != 2) return c10::nullopt;
  const torch::jit::Block* pass = node.blocks()[0];
  const torch::jit::Block* raise = node.blocks()[1];
  if (pass->nodes().begin() != pass->nodes().end()) return c10::nullopt;
  auto it = raise->nodes().begin();
  if (it == raise->nodes().end() || it->kind() != c10::prim::RaiseException || ++it != raise->nodes().end()) {
    return c10::nullopt;
  }
  const torch::jit::Value* text = raise->nodes().front()->input(0);
  c10::optional<c10::IValue> constant = torch::jit::toIValue(text);
  if (!constant || !constant->isString()) return c10::nullopt;
  std::string message = constant->toStringRef();
  const std::string prefix = "AssertionError: ";
  return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
}

}  // namespace

void Walker::visit_if(const torch::jit::Node& node, Env& env) {
  ImportValue cond = env.at(node.input(0));
  c10::optional<std::string> assertion = assertion_message(node);
  if (assertion && !cond.is_static()) return handler_.assertion(cond, *assertion);
  if (!cond.is_static() || !cond.constant.isBool()) {
    if (!handler_.tolerate_dynamic_control()) {
      fail("data-dependent control flow (an `if` on a value computed from the inputs)");
    }
    // Probing: both branches are walked for what they compute; the outputs stay opaque.
    for (const torch::jit::Block* block : node.blocks()) run_block(*block, {}, env);
    bind_outputs(node, std::vector<ImportValue>(node.outputs().size()), env);
    return;
  }
  const torch::jit::Block* block = node.blocks()[cond.constant.toBool() ? 0 : 1];
  bind_outputs(node, run_block(*block, {}, env), env);
}

void Walker::visit_loop(const torch::jit::Node& node, Env& env) {
  std::vector<ImportValue> inputs = inputs_of(node, env);
  if (!inputs[0].is_static() || !inputs[1].is_static()) {
    if (!handler_.tolerate_dynamic_control()) fail("a loop whose trip count depends on the inputs");
    bind_outputs(node, std::vector<ImportValue>(node.outputs().size()), env);
    return;
  }
  int64_t trips = inputs[0].constant.toInt();
  bool go_on = inputs[1].constant.toBool();
  std::vector<ImportValue> carried(inputs.begin() + 2, inputs.end());
  for (int64_t i = 0; i < trips && go_on; ++i) {
    std::vector<ImportValue> block_inputs{ImportValue::of_static(i)};
    block_inputs.insert(block_inputs.end(), carried.begin(), carried.end());
    auto outputs = run_block(*node.blocks()[0], std::move(block_inputs), env);
    if (!outputs[0].is_static()) fail("a loop whose condition depends on the inputs");
    go_on = outputs[0].constant.toBool();
    carried.assign(outputs.begin() + 1, outputs.end());
  }
  bind_outputs(node, std::move(carried), env);
}

void Walker::visit_pass_through(const torch::jit::Node& node, Env& env) {
  std::vector<ImportValue> inputs = inputs_of(node, env);
  if (try_fold(node, inputs, env)) return;
  env[node.output()] = inputs[0];
}

void Walker::visit_identity_test(const torch::jit::Node& node, Env& env) {
  std::vector<ImportValue> inputs = inputs_of(node, env);
  if (try_fold(node, inputs, env)) return;
  // `x is None` where x is a node, module or attribute: never None.
  bool lhs_none = inputs[0].is_static() && inputs[0].constant.isNone();
  bool rhs_none = inputs[1].is_static() && inputs[1].constant.isNone();
  if (lhs_none == rhs_none || inputs[0].kind == ImportValue::Kind::kOpaque ||
      inputs[1].kind == ImportValue::Kind::kOpaque) {
    bind_outputs(node, handler_.call_op(node, std::move(inputs)), env);
    return;
  }
  bool is_op = node.kind() == c10::aten::__is__;
  env[node.output()] = ImportValue::of_static(!is_op);
}

void Walker::visit_uninitialized(const torch::jit::Node& node, Env& env) {
  env[node.output()] = ImportValue::opaque();  // the value of a branch that raises, never read
}

void Walker::visit_warn(const torch::jit::Node& /*node*/, Env& /*env*/) {
  // warnings.warn(...): Python prints it while FX traces; nothing is recorded
}

void Walker::visit_raise(const torch::jit::Node& node, Env& env) {
  if (handler_.tolerate_dynamic_control()) return;  // probing walks branches never taken
  std::vector<ImportValue> inputs = inputs_of(node, env);
  std::string message =
      !inputs.empty() && inputs[0].is_static() && inputs[0].constant.isString() ? inputs[0].constant.toStringRef() : "";
  fail("the model raises an exception: " + message);
}

}  // namespace qfx::io::detail
