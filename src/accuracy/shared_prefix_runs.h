#pragma once
// Several models converted from one calibrated model, run on the same
// batches: each resumes from the recorded values of a base model (run in full)
// after the leading nodes their graphs have in common.

#include <ATen/core/ivalue.h>

#include <memory>
#include <vector>

namespace qfx::ir {
class GraphModule;
class Interpreter;
}  // namespace qfx::ir

namespace qfx::detail {

/// Runs `models` on batch after batch, sharing work with `bases`.
///
/// A model's shared prefix with a base is the run of leading nodes with the
/// same name, op, target and arguments (and, for call_module, module type);
/// it is then checked on the first batch, value by value (tensors equal in
/// dtype, shape, quantization and every element), and cut at the first
/// difference. A prefix is not shared when a node after it in either graph
/// may change a tensor in place. Models whose prefix is empty run in full.
/// Memory: on the first batch a base keeps every node's value; after it,
/// only the values of nodes before a model's prefix end that a node after it
/// uses.
class SharedPrefixRuns {
 public:
  /// The graphs must outlive this object.
  SharedPrefixRuns(const std::vector<const ir::GraphModule*>& bases, const std::vector<const ir::GraphModule*>& models);
  ~SharedPrefixRuns();
  SharedPrefixRuns(const SharedPrefixRuns&) = delete;
  SharedPrefixRuns& operator=(const SharedPrefixRuns&) = delete;

  /// Every model's output on `inputs`, in the order given.
  std::vector<c10::IValue> run(const std::vector<c10::IValue>& inputs);

  /// The share of the models' nodes run from a base's values (after the
  /// first batch): 0 when nothing is shared.
  double shared_fraction() const;

 private:
  struct Base {
    const ir::GraphModule* gm;
    std::unique_ptr<ir::Interpreter> interpreter;
    std::vector<bool> keep;  // which values to record
  };
  struct Model;
  std::vector<Base> bases_;
  std::vector<Model> models_;
  bool checked_ = false;
  static c10::IValue run_checking(Model& model, const std::vector<c10::IValue>& inputs,
                                  const std::vector<c10::IValue>& base_values);
  void keep_only_what_models_read();
};

}  // namespace qfx::detail
