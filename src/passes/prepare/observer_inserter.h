#pragma once
// ObserverInserter: the graph edits of insert-observers — new observer
// modules named `activation_post_process_N` and their call nodes, input
// observers reused across the users of a value, output observers shared
// with the input (PyTorch 1.13's insert_observer,
// maybe_insert_input_observer_for_arg_or_kwarg,
// maybe_make_input_output_share_observers). Internal to the passes.

#include "passes/target_dtypes.h"

#include "qfx/quant/observer_spec.h"

#include <memory>
#include <string>
#include <unordered_map>

namespace qfx::passes::detail {

class ObserverInserter {
 public:
  ObserverInserter(ir::GraphModule& gm, std::unordered_map<const ir::Node*, DtypeInfo>& dtypes,
                   const WeightArgs& weight_args)
      : gm_(gm), dtypes_(dtypes), weight_args_(weight_args) {}

  /// A new observer from `spec`, called on `value` right after it.
  ir::Node* insert_after(ir::Node& value, const quant::ObserverSpec& spec);

  /// Observes the arguments of `node` that its qconfig wants quantized.
  void observe_inputs(ir::Node& node, const quant::QConfig& qconfig);

  /// `node` calls a standalone module: only its arguments at `indexes`
  /// arrive quantized (the module's input_quantized_indexes).
  void set_standalone_inputs(const ir::Node& node, std::vector<int64_t> indexes) {
    standalone_inputs_[&node] = std::move(indexes);
  }

  /// The dtype `arg` has as a value (an observer's is its input's).
  TargetDtype output_dtype(const ir::Node& arg) const;

  /// Makes the observers of `node`'s first input and its output one module;
  /// false when the first input has no observer to share.
  bool share_input_observer(ir::Node& node);

  /// Removes the observers after `node`.
  void remove_output_observers(ir::Node& node);

 private:
  ir::Argument observe_arg(ir::Node& node, const ir::Argument& arg, const quant::QConfig& qconfig);
  TargetDtype input_dtype(const ir::Node& node, const ir::Argument& arg) const;
  std::string next_observer_name();

  ir::GraphModule& gm_;
  std::unordered_map<const ir::Node*, DtypeInfo>& dtypes_;
  const WeightArgs& weight_args_;
  int64_t next_index_ = 0;
  std::unordered_map<const ir::Node*, std::vector<int64_t>> standalone_inputs_;
};

}  // namespace qfx::passes::detail
