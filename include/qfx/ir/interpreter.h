#pragma once
/// \file
/// Interpreter: runs a GraphModule on LibTorch values, node by node, as
/// `torch.fx.Interpreter`. The graph is compiled once into steps (module
/// pointers, op functions, argument slots, which values die where); `run`
/// then executes the steps and frees each value after its last use.

#include <ATen/core/ivalue.h>

#include <functional>
#include <memory>
#include <vector>

namespace qfx::ir {

class GraphModule;
class Node;

/// Executes a GraphModule. The interpreter snapshots the graph, submodules
/// and attributes at construction; build a new one after changing them.
///
/// Example:
/// \code
///   Interpreter interpreter(gm);
///   c10::IValue out = interpreter.run({torch::rand({1, 3, 224, 224})});
/// \endcode
class Interpreter {
 public:
  /// Called after each node with the node and its value, which the hook may
  /// replace: later nodes read what it leaves.
  using NodeHook = std::function<void(const Node&, c10::IValue&)>;

  /// Compiles `gm`. Raises c10::Error naming the node when a target is
  /// unknown (no such submodule, attribute, function or method).
  explicit Interpreter(const GraphModule& gm);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  /// Runs forward() on positional inputs and returns the output value. An
  /// error inside a node is re-raised as `While executing <node>: <cause>`.
  c10::IValue run(std::vector<c10::IValue> inputs);

  /// Runs forward() and stores in `values` the value of each node whose
  /// graph position is true in `keep` (None for the others). Modules that
  /// may change their input in place and have an out-of-place forward
  /// (ModuleKind::fresh_forward) run that, so a value stays as its node made
  /// it unless changes_in_place_from() says otherwise; observers run in line.
  c10::IValue run_recording(std::vector<c10::IValue> inputs, const std::vector<bool>& keep,
                            std::vector<c10::IValue>& values);

  /// Runs forward() from graph position `first` on, as run_recording does,
  /// with the values of the nodes before it taken from `values` (what
  /// run_recording stored for this graph, or for one whose first `first`
  /// nodes compute the same; only those used from `first` on). c10::Error when a placeholder is at or after
  /// `first`. Steps from `first` on must not change those values: see
  /// changes_in_place_from().
  c10::IValue run_from(size_t first, const std::vector<c10::IValue>& values);

  /// Whether a node at graph position `first` or later may change a tensor in
  /// place in run_recording and run_from: an in-place op, `out=`, a module
  /// without an out-of-place forward that may change its input.
  bool changes_in_place_from(size_t first) const;

  /// Installs a hook called after every node (e.g. to record activations).
  void set_node_hook(NodeHook hook);

  /// Number of placeholders and how many of them have defaults.
  size_t num_inputs() const;

  /// Where observer modules (ModuleKind::observer) run.
  enum class ObserverThread {
    kAuto,  ///< on the observer thread when a core is idle (more hardware threads than ATen's)
    kOn,    ///< on the observer thread
    kOff,   ///< in line, node after node
  };
  /// On the observer thread, an observer's forward runs while the nodes after
  /// it do; run() waits for every observer before a node that may change a
  /// tensor in place (an in-place op, `inplace=True`, `out=`, a module qfx does
  /// not know) and before it returns, so observers see what they would see
  /// in line and are up to date when run() returns. Default kAuto.
  void set_observer_thread(ObserverThread mode);

 private:
  struct Program;
  struct RunMode {
    bool later;                        // observers on the observer thread
    bool fresh;                        // modules' out-of-place forward where they have one
    const std::vector<bool>* keep;     // which values to record
    std::vector<c10::IValue>* record;  // the recorded values, when set
  };
  void check_inputs(const std::vector<c10::IValue>& inputs) const;
  c10::IValue run_steps(size_t first, std::vector<c10::IValue>& inputs, RunMode mode);

  std::unique_ptr<Program> program_;
  NodeHook hook_;
  ObserverThread observer_thread_ = ObserverThread::kAuto;
};

}  // namespace qfx::ir
