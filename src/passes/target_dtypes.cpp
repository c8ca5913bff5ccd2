// target_dtypes: PyTorch 1.13's get_target_activation_dtype_for_node and
// propagate_dtypes_for_known_nodes (fx/prepare.py).

#include "target_dtypes.h"
#include "qfx/ir/op_names.h"

#include "qfx/pattern/op_catalog.h"

#include <algorithm>

namespace qfx::passes::detail {
namespace {

DtypeInfo both(TargetDtype dtype) { return DtypeInfo{dtype, false, dtype, std::nullopt, std::nullopt}; }

bool contains(const std::vector<int64_t>& indexes, int64_t index) {
  return std::find(indexes.begin(), indexes.end(), index) != indexes.end();
}

/// A node with a qconfig, matched by a pattern whose inputs and outputs are observed.
DtypeInfo from_qconfig(const quant::QConfig& qconfig) {
  quant::QConfigDtypes dtypes = quant::qconfig_dtypes(qconfig);
  bool dynamic = dtypes.compute.has_value();
  DtypeInfo info;
  info.input = dtypes.activation;
  info.input_is_dynamic = dynamic;
  info.weight = dtypes.weight;
  bool fp16 = dtypes.activation == c10::kHalf && dtypes.weight == c10::kHalf && !dynamic;
  info.bias = fp16 ? c10::kHalf : c10::kFloat;
  info.output = dynamic ? c10::kFloat : dtypes.activation;
  return info;
}

/// The dtype an importer recorded for the node's value when it is not a floating type.
std::optional<c10::ScalarType> recorded_dtype(const ir::Node& node) {
  auto it = node.meta().find(ir::kValueDtypeMeta);
  if (it == node.meta().end()) return std::nullopt;
  return std::any_cast<c10::ScalarType>(it->second);
}

DtypeInfo call_dtypes(const ir::Node& node, const ir::GraphModule& gm, const QuantMatches& matches,
                      const quant::QConfigAny& qconfig, std::unordered_map<const ir::Node*, bool>& cache) {
  // beyond 1.13, which would observe it and fail to quantize it when the model runs
  if (auto dtype = recorded_dtype(node)) return both(*dtype);
  if (has_no_tensors(ir::Argument(const_cast<ir::Node*>(&node)), gm, cache)) return both(std::nullopt);
  if (node.op() == ir::Opcode::kCallFunction && node.target() == ir::op::kGetitem) return both(c10::kFloat);
  auto match = matches.find(&node);
  // a match without a config is a standalone module's: inputs and output observed
  bool observed = match != matches.end() &&
                  (match->second->config == nullptr || match->second->config->input_output_observed().value_or(true));
  if (qconfig && observed) return from_qconfig(*qconfig);
  return both(c10::kFloat);
}

/// Arguments of shape ops whose dtype is known not to be float.
struct KnownArgs {
  const char* method;
  c10::ScalarType dtype;
  int64_t index;  ///< -1: every argument but the first
};

constexpr KnownArgs kKnownArgs[] = {
    {"masked_fill", c10::kBool, 1}, {"masked_fill", c10::kDouble, 2}, {"permute", c10::kLong, -1},
    {"repeat", c10::kLong, -1},     {"reshape", c10::kLong, -1},      {"size", c10::kLong, 1},
    {"transpose", c10::kLong, -1},  {"unsqueeze", c10::kLong, 1},     {"unsqueeze_", c10::kLong, 1},
    {"view", c10::kLong, -1},
};

void propagate(const ir::Node& node, c10::ScalarType dtype, const ir::Node& set_by,
               std::unordered_map<const ir::Node*, DtypeInfo>& infos, const QuantMatches& matches) {
  infos[&node].input = dtype;
  infos[&node].input_is_dynamic = false;
  infos[&node].output = dtype;
  infos[&node].set_by = &set_by;
  auto match = matches.find(&node);
  if (match == matches.end() || !match->second->shares_observer() || node.args().empty()) return;
  if (node.args()[0].is_node()) propagate(*node.args()[0].to_node(), dtype, set_by, infos, matches);
}

void propagate_known(const ir::Node& node, std::unordered_map<const ir::Node*, DtypeInfo>& infos,
                     const QuantMatches& matches) {
  if (node.op() != ir::Opcode::kCallMethod) return;
  for (const KnownArgs& known : kKnownArgs) {
    if (node.target() != known.method) continue;
    for (size_t i = 0; i < node.args().size(); ++i) {
      bool selected = known.index < 0 ? i > 0 : static_cast<int64_t>(i) == known.index;
      if (!selected) continue;
      const ir::Argument& arg = node.args()[i];
      std::vector<ir::Argument> items = arg.has_items() ? arg.items() : std::vector<ir::Argument>{arg};
      for (const ir::Argument& item : items) {
        if (item.is_node()) propagate(*item.to_node(), known.dtype, node, infos, matches);
      }
    }
  }
}

}  // namespace

bool is_unobservable(const TargetDtype& dtype) {
  return !dtype || *dtype == c10::kLong || *dtype == c10::kDouble || *dtype == c10::kBool;
}

WeightArgs::WeightArgs(const backend::BackendConfig& backend) {
  for (const backend::BackendPatternConfig& config : backend.configs()) {
    const auto& elements = config.pattern().elements();
    if (elements.size() != 1 || elements[0].op.kind != pattern::OpKind::kFunction) continue;
    if (!config.input_type_to_index().empty()) index_[elements[0].op.name] = config.input_type_to_index();
  }
}

bool WeightArgs::is(const ir::Node& node, const ir::Argument& arg, const std::string& kind) const {
  if (node.op() != ir::Opcode::kCallFunction) return false;
  auto it = index_.find(pattern::canonical_op_name(node.target()));
  if (it == index_.end()) return false;
  auto index = it->second.find(kind);
  if (index != it->second.end() && index->second < static_cast<int64_t>(node.args().size()) &&
      node.args()[index->second] == arg) {
    return true;
  }
  const ir::Argument* kwarg = node.kwarg(kind);
  return kwarg != nullptr && *kwarg == arg;
}

std::unordered_map<const ir::Node*, DtypeInfo> target_dtypes(
    const ir::GraphModule& gm, const QuantMatches& matches,
    const std::unordered_map<const ir::Node*, quant::QConfigAny>& qconfigs,
    const std::vector<int64_t>& input_quantized_indexes, const std::vector<int64_t>& output_quantized_indexes) {
  std::unordered_map<const ir::Node*, DtypeInfo> infos;
  std::unordered_map<const ir::Node*, bool> cache;
  int64_t inputs_seen = 0;
  for (const ir::Node* node : gm.graph().nodes()) {
    auto qconfig = qconfigs.find(node);
    switch (node->op()) {
      case ir::Opcode::kPlaceholder:
        infos[node] = both(contains(input_quantized_indexes, inputs_seen++) ? c10::kQUInt8 : c10::kFloat);
        if (auto dtype = recorded_dtype(*node)) infos[node] = both(*dtype);
        break;
      case ir::Opcode::kOutput:
        infos[node] = both(contains(output_quantized_indexes, 0) ? c10::kQUInt8 : c10::kFloat);
        break;
      case ir::Opcode::kGetAttr: infos[node] = both(c10::kFloat); break;
      default:
        infos[node] =
            call_dtypes(*node, gm, matches, qconfig == qconfigs.end() ? std::nullopt : qconfig->second, cache);
    }
  }
  for (const ir::Node* node : gm.graph().nodes()) propagate_known(*node, infos, matches);
  return infos;
}

}  // namespace qfx::passes::detail
