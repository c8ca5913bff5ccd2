#pragma once
// Walker: evaluates a TorchScript graph abstractly, as Python would run the
// model under FX's symbolic tracer. Constants are computed (by the JIT's own
// operators), constant `if`s and counted loops are unrolled, lists and tuples
// are tracked element-wise; module calls and ops on non-constant values are
// handed to a Handler, which builds the FX graph (or, for a leaf module,
// records what the leaf computes).

#include "value.h"

#include <torch/csrc/jit/ir/ir.h>

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace qfx::io::detail {

class Walker {
 public:
  /// What to do at the points the walker cannot evaluate itself.
  class Handler {
   public:
    virtual ~Handler() = default;
    /// `module.method(*args)`.
    virtual ImportValue call_module(const ImportValue& module, const std::string& method,
                                    std::vector<ImportValue> args) = 0;
    /// An op whose inputs are not all constants (or whose output is a
    /// tensor); returns one value per output.
    virtual std::vector<ImportValue> call_op(const torch::jit::Node& node, std::vector<ImportValue> inputs) = 0;
    /// A call of a compiled Python function (`torch.nn.functional.relu`): a
    /// value to use as its result, or nullopt to walk into the function.
    virtual c10::optional<ImportValue> call_function(const std::string& qualified_name,
                                                     const c10::FunctionSchema& schema,
                                                     const std::vector<ImportValue>& args) {
      return c10::nullopt;
    }
    /// `sequence[index]` for a value produced by call_op.
    virtual ImportValue element(const ImportValue& sequence, int64_t index) = 0;
    /// `torch._assert(condition, message)`, which TorchScript compiles to an
    /// `if` that raises; FX records it as a call.
    virtual void assertion(const ImportValue& condition, const std::string& message) {}
    /// True: an `if` on a non-constant condition gives opaque outputs instead
    /// of an error (used when probing a leaf module's internals).
    virtual bool tolerate_dynamic_control() const { return false; }
  };

  explicit Walker(Handler& handler) : handler_(handler) {}

  /// Runs `graph` on `inputs` (inputs[0] is `self`) and returns its outputs.
  std::vector<ImportValue> run(const torch::jit::Graph& graph, std::vector<ImportValue> inputs);

  /// Where the walk is: module path and source location of the current op.
  std::string where() const;
  /// Raises c10::Error with `what` and the current location.
  [[noreturn]] void fail(const std::string& what) const;

 private:
  using Env = std::unordered_map<const torch::jit::Value*, ImportValue>;
  using Visit = void (Walker::*)(const torch::jit::Node&, Env&);

  std::vector<ImportValue> run_block(const torch::jit::Block& block, std::vector<ImportValue> inputs, Env& env);
  void visit(const torch::jit::Node& node, Env& env);
  std::vector<ImportValue> inputs_of(const torch::jit::Node& node, const Env& env) const;
  void bind_outputs(const torch::jit::Node& node, std::vector<ImportValue> values, Env& env);
  bool try_concat(const torch::jit::Node& node, const std::vector<ImportValue>& inputs, Env& env);
  bool try_fold(const torch::jit::Node& node, const std::vector<ImportValue>& inputs, Env& env);

  void visit_constant(const torch::jit::Node& node, Env& env);
  void visit_get_attr(const torch::jit::Node& node, Env& env);
  void visit_call_method(const torch::jit::Node& node, Env& env);
  void visit_call_function(const torch::jit::Node& node, Env& env);
  void visit_construct(const torch::jit::Node& node, Env& env);
  void visit_unpack(const torch::jit::Node& node, Env& env);
  void visit_index(const torch::jit::Node& node, Env& env);
  void visit_if(const torch::jit::Node& node, Env& env);
  void visit_loop(const torch::jit::Node& node, Env& env);
  void visit_pass_through(const torch::jit::Node& node, Env& env);
  void visit_identity_test(const torch::jit::Node& node, Env& env);
  void visit_raise(const torch::jit::Node& node, Env& env);
  void visit_warn(const torch::jit::Node& node, Env& env);
  void visit_uninitialized(const torch::jit::Node& node, Env& env);

  static const std::unordered_map<std::string, Visit>& visitors();

  Handler& handler_;
  std::vector<std::string> module_stack_;
  const torch::jit::Node* current_ = nullptr;
};

/// A readable source location for a TorchScript node: the original Python
/// file and line when the debug info has it, else the serialized code's.
std::string source_location(const torch::jit::Node& node);

}  // namespace qfx::io::detail
