// Interpreter: compile once, run many times.
//
//   compile:  node -> Step { what to call, argument code, slots to free }
//   run:      for each step: evaluate arguments from slots, call, store the
//             value in the node's slot, free the slots whose last use it was
//
// Arguments without nodes are converted to IValues at compile time.
// Observer steps may run on the observer thread; steps that may change a
// tensor in place (barriers) wait for it first.

#include "qfx/ir/interpreter.h"

#include "interpreter_effects.h"

#include "qfx/ir/graph_module.h"
#include "qfx/ir/module_registry.h"
#include "qfx/ir/op_registry.h"
#include "util/worker_thread.h"

#include <c10/util/Exception.h>
#include <torch/nn/module.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace qfx::ir {

namespace interpreter_detail {

/// An argument of a step, compiled (outside the anonymous namespace: the
/// steps of Interpreter::Program hold it).
struct ArgCode {
  enum class Kind { kConstant, kSlot, kList, kTuple, kSlice };
  Kind kind = Kind::kConstant;
  c10::IValue constant;
  size_t slot = 0;
  std::vector<ArgCode> items;
};

}  // namespace interpreter_detail

namespace {

using interpreter_detail::ArgCode;

bool contains_node(const Argument& arg) {
  bool found = false;
  for_each_node(arg, [&found](Node*) { found = true; });
  return found;
}

c10::IValue constant_value(const Argument& arg);

std::vector<c10::IValue> constant_items(const Argument& arg) {
  std::vector<c10::IValue> items;
  for (const Argument& item : arg.items()) items.push_back(constant_value(item));
  return items;
}

c10::IValue make_list(std::vector<c10::IValue> items) {
  c10::impl::GenericList list(c10::AnyType::get());
  for (auto& item : items) list.push_back(std::move(item));
  return list;
}

c10::IValue constant_value(const Argument& arg) {
  switch (arg.kind()) {
    case Argument::Kind::kNone: return {};
    case Argument::Kind::kBool: return arg.to_bool();
    case Argument::Kind::kInt: return arg.to_int();
    case Argument::Kind::kDouble: return arg.to_double();
    case Argument::Kind::kString: return arg.to_string();
    case Argument::Kind::kDtype: return static_cast<int64_t>(arg.to_dtype());
    case Argument::Kind::kLayout: return static_cast<int64_t>(arg.to_layout());
    case Argument::Kind::kMemoryFormat: return static_cast<int64_t>(arg.to_memory_format());
    case Argument::Kind::kList: return make_list(constant_items(arg));
    case Argument::Kind::kTuple: return c10::ivalue::Tuple::create(constant_items(arg));
    case Argument::Kind::kSlice: {
      auto items = constant_items(arg);
      return make_slice(items[0], items[1], items[2]);
    }
    case Argument::Kind::kEllipsis: return make_ellipsis();
    case Argument::Kind::kNode: break;
  }
  TORCH_CHECK(false, "internal: constant_value on a Node");
}

// Waits for the observer thread, leaving its errors to the exception being
// handled.
void wait_quietly(util::WorkerThread& observers) {
  try {
    observers.drain();
  } catch (...) {
  }
}

// Re-raises the exception being handled as a c10::Error that names the node.
[[noreturn]] void rethrow_at(const char* doing, const Node& node) {
  try {
    throw;
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, doing, " ", node.format(), ": ", e.what_without_backtrace());
  } catch (const std::exception& e) {
    TORCH_CHECK(false, doing, " ", node.format(), ": ", e.what());
  }
}

/// The type a placeholder is declared with (a scripted model's annotation), or "".
std::string declared_type(const Node& node) {
  auto it = node.meta().find(kInputTypeMeta);
  return it == node.meta().end() ? "" : std::any_cast<std::string>(it->second);
}

/// Whether `value` can be an input of declared type `type`: a tensor for
/// `Tensor`, a list or tuple for `List[...]` / `Tuple[...]`; anything for
/// other or no declarations.
bool fits_declared(const std::string& type, const c10::IValue& value) {
  if (type == "Tensor") return value.isTensor();
  if (type.rfind("List[", 0) == 0 || type.rfind("Tuple[", 0) == 0) return value.isList() || value.isTuple();
  return true;
}

/// What a value is, for messages: `a Tensor`, `a list`, ...
std::string value_kind(const c10::IValue& value) {
  if (value.isTensor()) return "a Tensor";
  if (value.isList()) return "a list";
  if (value.isTuple()) return "a tuple";
  return std::string("a ") + value.tagKind();
}

}  // namespace

struct Interpreter::Program {
  enum class StepKind { kPlaceholder, kConstant, kModule, kOp, kOutput };
  struct Step {
    const Node* node = nullptr;
    StepKind kind = StepKind::kConstant;
    size_t input_index = 0;
    c10::IValue constant;  // get_attr value or placeholder default
    bool has_default = false;
    torch::nn::Module* module = nullptr;
    const ModuleKind* module_kind = nullptr;
    const ModuleForward* forward = nullptr;
    const ModuleForward* fresh = nullptr;  // out of place, for recorded and resumed runs
    const OpFn* op = nullptr;
    std::vector<ArgCode> args;
    std::vector<std::pair<std::string, ArgCode>> kwargs;
    std::vector<size_t> free_after;
    bool observer = false;    // may run on the observer thread
    bool barrier = false;     // may change a tensor in place
    bool in_place = false;    // may change a tensor in place even with `fresh`
    bool copy_input = false;  // an observer whose input an in-place module changes next
    std::string where;        // "While executing %node ..." of an observer
  };

  std::vector<Step> steps;
  std::vector<c10::IValue> slots;
  size_t num_inputs = 0;
  size_t num_required = 0;
  /// Each input's declared type (kInputTypeMeta, "" when none) and name.
  std::vector<std::pair<std::string, std::string>> declared;
  bool has_observers = false;
  std::vector<std::shared_ptr<torch::nn::Module>> keep_alive;
  std::unordered_map<const Node*, size_t> slot_of;

  ArgCode compile_arg(const Argument& arg) const;
  Step compile_step(const GraphModule& gm, const Node& node);
  c10::IValue eval(const ArgCode& code) const;
  c10::IValue execute(const Step& step, std::vector<c10::IValue>& inputs, bool fresh = false) const;
  c10::IValue observe_later(const Step& step) const;
  void spare_inplace_inputs();
};

ArgCode Interpreter::Program::compile_arg(const Argument& arg) const {
  ArgCode code;
  if (!contains_node(arg)) {
    code.constant = constant_value(arg);
    return code;
  }
  if (arg.is_node()) {
    code.kind = ArgCode::Kind::kSlot;
    code.slot = slot_of.at(arg.to_node());
    return code;
  }
  code.kind = arg.kind() == Argument::Kind::kList    ? ArgCode::Kind::kList
              : arg.kind() == Argument::Kind::kTuple ? ArgCode::Kind::kTuple
                                                     : ArgCode::Kind::kSlice;
  for (const Argument& item : arg.items()) code.items.push_back(compile_arg(item));
  return code;
}

Interpreter::Program::Step Interpreter::Program::compile_step(const GraphModule& gm, const Node& node) {
  Step step;
  step.node = &node;
  for (const Argument& a : node.args()) step.args.push_back(compile_arg(a));
  for (const auto& [key, value] : node.kwargs()) step.kwargs.emplace_back(key, compile_arg(value));
  switch (node.op()) {
    case Opcode::kPlaceholder:
      step.kind = StepKind::kPlaceholder;
      step.input_index = num_inputs++;
      declared.emplace_back(declared_type(node), node.name());
      step.has_default = !node.args().empty();
      if (step.has_default)
        step.constant = constant_value(node.args()[0]);
      else
        num_required = num_inputs;
      break;
    case Opcode::kGetAttr: step.constant = gm.get_attr(node.target()); break;
    case Opcode::kCallModule: {
      auto module = gm.get_submodule(node.target());
      const ModuleKind* kind = ModuleRegistry::instance().find(*module);
      TORCH_CHECK(kind != nullptr, "submodule '", node.target(), "' is a ", module->name(), ", which qfx cannot run");
      TORCH_CHECK(node.kwargs().empty(), "keyword arguments to modules are not supported");
      step.kind = StepKind::kModule;
      step.module = module.get();
      step.module_kind = kind;
      step.forward = &kind->forward;
      step.observer = kind->observer;
      step.barrier = detail::module_may_mutate(*kind);
      step.fresh = kind->fresh_forward ? &kind->fresh_forward : step.forward;
      step.in_place = step.barrier && !kind->fresh_forward;
      if (step.observer) step.where = "While executing " + node.format();
      keep_alive.push_back(std::move(module));
      break;
    }
    case Opcode::kCallFunction:
    case Opcode::kCallMethod: {
      bool is_fn = node.op() == Opcode::kCallFunction;
      step.kind = StepKind::kOp;
      step.op = (is_fn ? OpRegistry::functions() : OpRegistry::methods()).find(node.target());
      TORCH_CHECK(step.op != nullptr, "no implementation of ", is_fn ? "function " : "method ", node.target());
      step.barrier = step.in_place = detail::op_may_mutate(node);
      break;
    }
    case Opcode::kOutput: step.kind = StepKind::kOutput; break;
  }
  return step;
}

c10::IValue Interpreter::Program::eval(const ArgCode& code) const {
  switch (code.kind) {
    case ArgCode::Kind::kConstant: return code.constant;
    case ArgCode::Kind::kSlot: return slots[code.slot];
    default: break;
  }
  std::vector<c10::IValue> items;
  items.reserve(code.items.size());
  for (const ArgCode& item : code.items) items.push_back(eval(item));
  if (code.kind == ArgCode::Kind::kList) return make_list(std::move(items));
  if (code.kind == ArgCode::Kind::kTuple) return c10::ivalue::Tuple::create(std::move(items));
  return make_slice(items[0], items[1], items[2]);
}

c10::IValue Interpreter::Program::execute(const Step& step, std::vector<c10::IValue>& inputs, bool fresh) const {
  switch (step.kind) {
    case StepKind::kPlaceholder:
      return step.input_index < inputs.size() ? std::move(inputs[step.input_index]) : step.constant;
    case StepKind::kConstant: return step.constant;
    case StepKind::kOutput: return eval(step.args.at(0));
    default: break;
  }
  std::vector<c10::IValue> args;
  args.reserve(step.args.size());
  for (const ArgCode& a : step.args) args.push_back(eval(a));
  if (step.kind == StepKind::kModule) return (*(fresh ? step.fresh : step.forward))(*step.module, args);
  CallArgs::KwargValues kwargs;
  for (const auto& [key, code] : step.kwargs) kwargs.emplace_back(key, eval(code));
  return (*step.op)(CallArgs(std::move(args), std::move(kwargs)));
}

// Queues an observer's forward on the observer thread; its value is its
// input, as the forward returns it.
c10::IValue Interpreter::Program::observe_later(const Step& step) const {
  std::vector<c10::IValue> args;
  for (const ArgCode& a : step.args) args.push_back(eval(a));
  if (args.size() != 1 || !args[0].isTensor()) {  // in line, after this observer's earlier batches
    util::WorkerThread::instance().drain();
    return (*step.forward)(*step.module, args);
  }
  c10::IValue value = args[0];
  if (step.copy_input) args[0] = args[0].toTensor().clone();
  const size_t bytes = value.toTensor().nbytes();
  util::WorkerThread::instance().submit(
      [module = step.module, forward = step.forward, args = std::move(args)]() mutable { (*forward)(*module, args); },
      bytes, step.where);
  return value;
}

// An in-place-capable module need not wait for the observer thread
// when its input is a fresh tensor that only observers saw on the way: the
// output of a module with parameters (conv, linear, norm: never a view), each
// node from there used once. A kind with a forward into a new tensor
// (ModuleKind::fresh_forward) runs that, leaving its input as the observers
// saw it (the same values as in place); the observers of any other kind are
// given a copy.
void Interpreter::Program::spare_inplace_inputs() {
  auto single_node_input = [](const Node& node) -> Node* {
    return node.args().size() == 1 && node.args()[0].is_node() ? node.args()[0].to_node() : nullptr;
  };
  for (Step& step : steps) {
    if (step.kind != StepKind::kModule || !step.barrier || !detail::known_kind(*step.module_kind)) continue;
    Node* from = single_node_input(*step.node);
    std::vector<size_t> observers;
    while (from != nullptr && from->users().size() == 1 && steps[slot_of.at(from)].observer) {
      observers.push_back(slot_of.at(from));
      from = single_node_input(*from);
    }
    if (from == nullptr || from->users().size() != 1) continue;
    const Step& producer = steps[slot_of.at(from)];
    if (producer.kind != StepKind::kModule || !detail::known_kind(*producer.module_kind) ||
        producer.module->parameters().empty()) {
      continue;
    }
    step.barrier = false;
    if (!observers.empty() && step.module_kind->fresh_forward) {
      step.forward = &step.module_kind->fresh_forward;
      continue;
    }
    for (size_t observer : observers) steps[observer].copy_input = true;
  }
}

Interpreter::Interpreter(const GraphModule& gm) : program_(std::make_unique<Program>()) {
  Program& p = *program_;
  for (Node* node : gm.graph().nodes()) {
    try {
      p.steps.push_back(p.compile_step(gm, *node));
    } catch (...) {
      rethrow_at("While compiling", *node);
    }
    p.slot_of[node] = p.steps.size() - 1;
  }
  // Walking backwards, the first use seen of a value is its last use.
  std::vector<bool> seen(p.steps.size(), false);
  for (size_t i = p.steps.size(); i-- > 0;) {
    for (Node* input : p.steps[i].node->input_nodes()) {
      size_t slot = p.slot_of.at(input);
      if (!seen[slot]) {
        seen[slot] = true;
        p.steps[i].free_after.push_back(slot);
      }
    }
  }
  p.slots.resize(p.steps.size());
  p.has_observers = std::any_of(p.steps.begin(), p.steps.end(), [](const Program::Step& s) { return s.observer; });
  p.spare_inplace_inputs();
}

Interpreter::~Interpreter() = default;

void Interpreter::set_node_hook(NodeHook hook) { hook_ = std::move(hook); }

void Interpreter::set_observer_thread(ObserverThread mode) { observer_thread_ = mode; }

size_t Interpreter::num_inputs() const { return program_->num_inputs; }

void Interpreter::check_inputs(const std::vector<c10::IValue>& inputs) const {
  const Program& p = *program_;
  size_t count = inputs.size();
  TORCH_CHECK(count >= p.num_required && count <= p.num_inputs, "forward() takes ",
              p.num_required == p.num_inputs ? "" : "at least ", p.num_required, " input(s), got ", count);
  for (size_t i = 0; i < count; ++i) {
    const auto& [type, name] = p.declared[i];
    TORCH_CHECK(fits_declared(type, inputs[i]), "input %", name, " is declared ", type, ", and the value given is ",
                value_kind(inputs[i]));
  }
}

c10::IValue Interpreter::run(std::vector<c10::IValue> inputs) {
  check_inputs(inputs);
  const Program& p = *program_;
  const bool later = observer_thread_ != ObserverThread::kOff && p.has_observers &&
                     (observer_thread_ == ObserverThread::kOn || util::idle_core_available());
  return run_steps(0, inputs, {later, false, nullptr, nullptr});
}

c10::IValue Interpreter::run_recording(std::vector<c10::IValue> inputs, const std::vector<bool>& keep,
                                       std::vector<c10::IValue>& values) {
  check_inputs(inputs);
  values.assign(program_->steps.size(), c10::IValue());
  return run_steps(0, inputs, {false, true, &keep, &values});
}

c10::IValue Interpreter::run_from(size_t first, const std::vector<c10::IValue>& values) {
  Program& p = *program_;
  TORCH_CHECK(first <= values.size() && first < p.steps.size(), "run_from(", first, "): ", values.size(),
              " values for a graph of ", p.steps.size(), " nodes");
  for (size_t i = first; i < p.steps.size(); ++i) {
    TORCH_CHECK(p.steps[i].kind != Program::StepKind::kPlaceholder, "run_from(", first, "): placeholder ",
                p.steps[i].node->name(), " is not before it");
  }
  std::copy(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(first), p.slots.begin());
  std::vector<c10::IValue> no_inputs;
  return run_steps(first, no_inputs, {false, true, nullptr, nullptr});
}

bool Interpreter::changes_in_place_from(size_t first) const {
  const auto& steps = program_->steps;
  return std::any_of(steps.begin() + static_cast<std::ptrdiff_t>(std::min(first, steps.size())), steps.end(),
                     [](const Program::Step& s) { return s.in_place; });
}

c10::IValue Interpreter::run_steps(size_t first, std::vector<c10::IValue>& inputs, RunMode mode) {
  Program& p = *program_;
  util::WorkerThread* observers = mode.later ? &util::WorkerThread::instance() : nullptr;
  auto wait_for_observers = [&] {  // their errors name the observer node
    try {
      observers->drain();
    } catch (...) {
      std::fill(p.slots.begin(), p.slots.end(), c10::IValue());
      throw;
    }
  };
  c10::IValue result;
  for (size_t i = first; i < p.steps.size(); ++i) {
    const Program::Step& step = p.steps[i];
    if (mode.later && step.barrier) wait_for_observers();
    try {
      p.slots[i] = mode.later && step.observer ? p.observe_later(step) : p.execute(step, inputs, mode.fresh);
      if (hook_) hook_(*step.node, p.slots[i]);
      if (mode.record != nullptr && i < mode.keep->size() && (*mode.keep)[i]) (*mode.record)[i] = p.slots[i];
    } catch (...) {
      std::fill(p.slots.begin(), p.slots.end(), c10::IValue());
      if (mode.later) wait_quietly(*observers);
      rethrow_at("While executing", *step.node);
    }
    if (step.kind == Program::StepKind::kOutput) result = std::move(p.slots[i]);
    for (size_t slot : step.free_after) p.slots[slot] = c10::IValue();
  }
  if (mode.later) wait_for_observers();
  std::fill(p.slots.begin(), p.slots.end(), c10::IValue());
  return result;
}

}  // namespace qfx::ir
