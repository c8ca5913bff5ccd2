#pragma once
// lower-to-native's steps, in PyTorch 1.13's order, on one shared context.

#include "qfx/ir/graph_module.h"
#include "qfx/nn/quantized.h"
#include "qfx/passes/pass.h"
#include "qfx/passes/pass_jobs.h"
#include "qfx/passes/prepare_state.h"
#include "passes/qdq_edits.h"
#include "passes/rewrite_rules.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace qfx::passes::detail {

/// The graph being lowered and what the steps noticed.
struct Lowering {
  Lowering(ir::GraphModule& graph_module, const LowerToNativeOptions& pass_options)
      : gm(graph_module), options(pass_options) {}

  ir::GraphModule& gm;
  const LowerToNativeOptions& options;
  /// Why a candidate node was left as it is (for --explain).
  std::map<const ir::Node*, std::string> refusals;
  bool changed = false;

  /// The module a call_module node calls, or nullptr for other nodes.
  std::shared_ptr<torch::nn::Module> module(const ir::Node* node) const;
  /// quantized_from_reference, or nullptr with the reason kept in refusals;
  /// taken from the jobs prebuild started when they built the same thing.
  std::shared_ptr<nn::QuantizedModuleImpl> make_quantized(const ir::Node& node, const std::string& type,
                                                          std::optional<nn::OutputQParams> output);

  /// One module make_quantized will be asked for.
  struct Build {
    const ir::Node* node;
    std::string type;
    std::optional<nn::OutputQParams> output;
  };
  /// Starts building `builds` as jobs (pass_jobs.h: weight quantization
  /// and prepacking are most of convert's time), in their order;
  /// make_quantized hands them out. Reads the nodes' modules now: the
  /// rewrite may swap modules meanwhile.
  void prebuild(std::vector<Build> builds);
  /// Stops the jobs and drops the modules make_quantized was not asked for.
  void forget_prebuilt();

  /// Puts `quantized` at `target` in place of its reference module, which
  /// the GraphModule retires.
  void swap_in(const std::string& target, std::shared_ptr<torch::nn::Module> quantized);

  /// Erases `node`, remembering it for the rest of the step (a match whose
  /// output an earlier rewrite erased is skipped).
  void erase(ir::Node* node);
  bool is_erased(const ir::Node* node) const { return erased_.count(node) > 0; }
  /// Records why `node` stays as it is (for explain_leftovers) and returns it.
  Decline refuse(const ir::Node& node, std::string why);

  /// One step: collects the matches of `rules`, calls `before_rewrites`
  /// (e.g. to start building their modules), rewrites each (re-checked
  /// first unless `options.recheck` is off), explains.
  template <class Context>
  void run_rules(const std::vector<RewriteRule<Context>>& rules, Context& context, RuleRunOptions options,
                 const std::function<void(const RuleRun&)>& before_rewrites = {}) {
    options.explain = this->options.explain != nullptr;
    RuleRun run(patterns_of(rules), gm, options);
    if (before_rewrites) before_rewrites(run);
    erased_.clear();
    changed |= apply_rules(run, rules, context, [this](const ir::Node* n) { return is_erased(n); });
    if (this->options.explain != nullptr) run.explain("lowered", *this->options.explain);
  }

 private:
  /// What building a module gave: the module, or why not.
  struct Built {
    std::shared_ptr<nn::QuantizedModuleImpl> module;
    std::string error;
  };
  static Built build(const Build& b, const torch::nn::Module& source);

  std::vector<Build> builds_;
  std::vector<std::shared_ptr<torch::nn::Module>> sources_;  // builds_[i]'s reference module
  std::unordered_map<const ir::Node*, size_t> prebuilt_index_;
  std::unique_ptr<JobResults<Built>> prebuilt_;  // builds_[i]'s; after what it reads
  std::unordered_set<const ir::Node*> erased_;
};

bool is_call(const ir::Node& node, ir::Opcode op, const char* target);
/// The scale and zero point a quantize node's get_attr arguments hold.
nn::OutputQParams output_qparams(const Lowering& l, const ir::Node& q);
/// Why `ref` (quantized by `q`, through a relu between them or not) is not
/// lowered when another node reads its float value, else "": lowering would
/// hand that node the quantized value (PyTorch 1.13 does; docs/divergences.md).
std::string read_as_float(const ir::Node& ref, const ir::Node& q);

// The steps, in _lower_to_native_backend's order, each named after the
// PyTorch 1.13 function it mirrors (fx/_lower_to_native_backend.py); each
// but fold_weights is a rule table (rewrite_rules.h).

/// _lower_static_weighted_ref_module: dq -> ref module -> q  =>  quantized module.
void lower_static_weighted_modules(Lowering& l);
/// _lower_dynamic_weighted_ref_module: q_dynamic -> dq -> ref module  =>  dynamic quantized module.
void lower_dynamic_weighted_modules(Lowering& l);
/// _lower_weight_only_weighted_ref_module: ref Embedding(Bag)  =>  quantized Embedding(Bag).
void lower_weight_only_modules(Lowering& l);
/// _lower_static_weighted_ref_functional: dq -> F.linear/conv (dq weight) -> q  =>  quantized op, prepacked weight.
void lower_static_functionals(Lowering& l);
/// _lower_dynamic_weighted_ref_functional: q_dynamic -> dq -> F.linear/conv  =>  dynamic quantized op.
void lower_dynamic_functionals(Lowering& l);
/// _lower_quantized_binary_op: dq, dq -> add/mul (-> relu) -> q  =>  quantized.add/mul(_relu).
void lower_binary_ops(Lowering& l);
/// _lower_getattr_tensor_metadta_op: x.shape / x.size() read the quantized value.
void lower_getattr_metadata(Lowering& l);
/// special_pattern_replacement: dq -> op -> q  =>  op on quantized values (or its quantized module).
void lower_special_patterns(Lowering& l);
/// fold_weight: runs each prepack whose inputs are all attributes once and
/// stores the packed weight as `<scope>_packed_weight_N`.
void fold_weights(Lowering& l);
/// For --explain: each reference module or functional linear/conv left, and why.
void explain_leftovers(const Lowering& l);

}  // namespace qfx::passes::detail
