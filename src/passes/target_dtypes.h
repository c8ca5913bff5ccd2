#pragma once
// The dtype each node's inputs, weight, bias and output will have in the
// quantized model (PyTorch 1.13's node_name_to_target_dtype), from the node's
// qconfig and match. Internal to the passes.
//
// Non-tensor values use stand-ins, as PyTorch uses Python types: kLong for
// int, kDouble for float, kBool for bool; nullopt is "unknown" (None).

#include "quant_matches.h"

#include "qfx/quant/qconfig.h"

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace qfx::passes::detail {

using TargetDtype = std::optional<c10::ScalarType>;

/// True for the stand-ins of values that are never observed (and unknown).
bool is_unobservable(const TargetDtype& dtype);

struct DtypeInfo {
  TargetDtype input;
  bool input_is_dynamic = false;
  TargetDtype output;
  TargetDtype weight;
  TargetDtype bias;
  /// The shape op (view, size, ...) whose non-tensor argument set input and
  /// output (PyTorch's propagate_dtypes_for_known_nodes), or null.
  const ir::Node* set_by = nullptr;
};

/// Where functional ops take their weight and bias (input_type_to_index).
class WeightArgs {
 public:
  explicit WeightArgs(const backend::BackendConfig& backend);
  bool is_weight(const ir::Node& node, const ir::Argument& arg) const { return is(node, arg, "weight"); }
  bool is_bias(const ir::Node& node, const ir::Argument& arg) const { return is(node, arg, "bias"); }

 private:
  bool is(const ir::Node& node, const ir::Argument& arg, const std::string& kind) const;
  std::unordered_map<std::string, std::map<std::string, int64_t>> index_;
};

/// Per node, from its qconfig and match: graph inputs and outputs float
/// unless listed as quantized; then known non-float arguments (masked_fill's
/// mask, view's sizes) propagated back through shape ops.
std::unordered_map<const ir::Node*, DtypeInfo> target_dtypes(
    const ir::GraphModule& gm, const QuantMatches& matches,
    const std::unordered_map<const ir::Node*, quant::QConfigAny>& qconfigs,
    const std::vector<int64_t>& input_quantized_indexes, const std::vector<int64_t>& output_quantized_indexes);

}  // namespace qfx::passes::detail
