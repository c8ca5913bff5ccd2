// QConfigMapping: ordered entries and PyTorch 1.13's resolution helpers
// (qconfig_mapping_utils.py), and generate_qconfig_map over a graph
// (fx/qconfig_mapping_utils.py).

#include "qfx/quant/qconfig_mapping.h"

#include "qfx/ir/graph_module.h"
#include "qfx/ir/module_registry.h"

#include <c10/util/Exception.h>
#include <re2/re2.h>

#include <algorithm>
#include <map>

namespace qfx::quant {
namespace {

template <typename Entries>
void upsert(Entries& entries, const std::string& key, QConfigAny qconfig) {
  auto it = std::find_if(entries.begin(), entries.end(), [&](const auto& e) { return e.first == key; });
  if (it == entries.end()) {
    entries.emplace_back(key, std::move(qconfig));
  } else {
    it->second = std::move(qconfig);
  }
}

std::string parent_name(const std::string& path) {
  size_t dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

}  // namespace

QConfigMapping& QConfigMapping::set_global(QConfigAny qconfig) {
  global_ = std::move(qconfig);
  return *this;
}

QConfigMapping& QConfigMapping::set_object_type(const std::string& object_type, QConfigAny qconfig) {
  upsert(object_types_, object_type, std::move(qconfig));
  return *this;
}

QConfigMapping& QConfigMapping::set_module_name_regex(const std::string& pattern, QConfigAny qconfig) {
  auto it = std::find_if(regexes_.begin(), regexes_.end(), [&](const RegexEntry& e) { return e.pattern == pattern; });
  if (it != regexes_.end()) {
    it->qconfig = std::move(qconfig);
    return *this;
  }
  RE2::Options options;
  options.set_log_errors(false);
  auto regex = std::make_shared<const RE2>(pattern, options);
  TORCH_CHECK(regex->ok(), "module_name_regex '", pattern.substr(0, 100), pattern.size() > 100 ? "..." : "",
              "' is not a valid regex: ", regex->error().substr(0, 200));
  regexes_.push_back({pattern, std::move(regex), std::move(qconfig)});
  return *this;
}

QConfigMapping& QConfigMapping::set_module_name(const std::string& module_name, QConfigAny qconfig) {
  upsert(module_names_, module_name, std::move(qconfig));
  return *this;
}

QConfigMapping& QConfigMapping::set_module_name_object_type_order(const std::string& module_name,
                                                                  const std::string& object_type, int64_t index,
                                                                  QConfigAny qconfig) {
  auto it = std::find_if(orders_.begin(), orders_.end(), [&](const OrderEntry& e) {
    return e.module_name == module_name && e.object_type == object_type && e.index == index;
  });
  if (it == orders_.end()) {
    orders_.push_back({module_name, object_type, index, std::move(qconfig)});
  } else {
    it->qconfig = std::move(qconfig);
  }
  return *this;
}

QConfigAny QConfigMapping::object_type_qconfig(const std::string& object_type, const QConfigAny& fallback) const {
  for (const auto& [type, qconfig] : object_types_) {
    if (type == object_type) return qconfig;
  }
  return fallback;
}

QConfigAny QConfigMapping::module_name_regex_qconfig(const std::string& module_name, const QConfigAny& fallback) const {
  for (const RegexEntry& e : regexes_) {
    // Python's re.match: a match at the start of the name.
    if (e.regex->Match(module_name, 0, module_name.size(), RE2::ANCHOR_START, nullptr, 0)) return e.qconfig;
  }
  return fallback;
}

QConfigAny QConfigMapping::module_name_qconfig(const std::string& module_name, const QConfigAny& fallback) const {
  for (std::string name = module_name; !name.empty(); name = parent_name(name)) {
    for (const auto& [key, qconfig] : module_names_) {
      if (key == name) return qconfig;
    }
  }
  return fallback;
}

QConfigAny QConfigMapping::module_type_or_name_qconfig(const std::string& module_type, const std::string& module_name,
                                                       const QConfigAny& fallback) const {
  QConfigAny by_type = object_type_qconfig(module_type, fallback);
  QConfigAny by_regex = module_name_regex_qconfig(module_name, by_type);
  return module_name_qconfig(module_name, by_regex);
}

QConfigAny QConfigMapping::module_name_object_type_order_qconfig(const std::string& module_name,
                                                                 const std::string& object_type, int64_t index,
                                                                 const QConfigAny& fallback) const {
  for (const OrderEntry& e : orders_) {
    if (e.module_name == module_name && e.object_type == object_type && e.index == index) return e.qconfig;
  }
  return fallback;
}

namespace {

QConfigMapping default_mapping(bool is_qat, const std::string& backend, int version) {
  QConfig qconfig = is_qat ? get_default_qat_qconfig(backend, version) : get_default_qconfig(backend);
  ObserverSpec default_weight = *observer_preset(is_qat ? "default_weight_fake_quant" : "default_weight_observer");
  QConfig transpose = backend == "fbgemm" || backend == "x86" ? QConfig{qconfig.activation, default_weight} : qconfig;
  QConfig layernorm{qconfig.activation, *observer_preset("default_placeholder_observer")};
  QConfigMapping mapping;
  mapping.set_global(qconfig).set_object_type("reshape", *qconfig_preset("default_reuse_input_qconfig"));
  struct Row {
    const char* type;
    const QConfig& qconfig;
  };
  const Row rows[] = {
      {"torch.nn.Conv1d", qconfig},
      {"torch.nn.Conv2d", qconfig},
      {"torch.nn.Conv3d", qconfig},
      {"torch.nn.ConvTranspose1d", transpose},
      {"torch.nn.ConvTranspose2d", transpose},
      {"torch.nn.ConvTranspose3d", transpose},
      {"torch.nn.Linear", qconfig},
      {"torch.nn.functional.conv1d", qconfig},
      {"torch.nn.functional.conv2d", qconfig},
      {"torch.nn.functional.conv3d", qconfig},
      {"torch.nn.functional.conv_transpose1d", transpose},
      {"torch.nn.functional.conv_transpose2d", transpose},
      {"torch.nn.functional.conv_transpose3d", transpose},
      {"torch.nn.functional.linear", qconfig},
      {"torch.nn.ReLU", qconfig},
      {"torch.nn.functional.relu", qconfig},
      {"torch.relu", qconfig},
      {"torch.nn.BatchNorm1d", qconfig},
      {"torch.nn.BatchNorm2d", qconfig},
      {"torch.nn.BatchNorm3d", qconfig},
      {"torch.nn.functional.layer_norm", layernorm},
      {"torch.nn.LayerNorm", layernorm},
  };
  for (const Row& row : rows) mapping.set_object_type(row.type, row.qconfig);
  // Ops with fixed output ranges get FixedQParams observers (fake-quants for QAT).
  for (const auto& [type, observer] : fixed_qparams_op_observers()) {
    ObserverSpec activation = is_qat ? ObserverSpec("FixedQParamsFakeQuantize", {{"observer", observer}}) : observer;
    mapping.set_object_type(type, QConfig{activation, default_weight});
  }
  return mapping;
}

}  // namespace

const std::vector<std::pair<std::string, ObserverSpec>>& fixed_qparams_op_observers() {
  static const auto kOps = [] {
    const std::pair<const char*, const char*> rows[] = {
        {"torch.nn.Hardsigmoid", "0to1"},
        {"torch.nn.functional.hardsigmoid", "0to1"},
        {"hardsigmoid", "0to1"},
        {"hardsigmoid_", "0to1"},
        {"torch.nn.Sigmoid", "0to1"},
        {"torch.sigmoid", "0to1"},
        {"sigmoid", "0to1"},
        {"sigmoid_", "0to1"},
        {"torch.nn.Softmax", "0to1"},
        {"torch.nn.Tanh", "neg1to1"},
        {"torch.tanh", "neg1to1"},
        {"tanh", "neg1to1"},
        {"tanh_", "neg1to1"},
    };
    std::vector<std::pair<std::string, ObserverSpec>> ops;
    for (const auto& [type, range] : rows) {
      ops.emplace_back(type, *observer_preset(std::string("default_fixed_qparams_range_") + range + "_observer"));
    }
    return ops;
  }();
  return kOps;
}

QConfigMapping get_default_qconfig_mapping(const std::string& backend) { return default_mapping(false, backend, 0); }

QConfigMapping get_default_qat_qconfig_mapping(const std::string& backend, int version) {
  return default_mapping(true, backend, version);
}

namespace {

std::string module_type_at(const ir::GraphModule& gm, const std::string& path) {
  auto module = gm.find_submodule(path);
  return module == nullptr ? "" : ir::module_type_name(*module);
}

}  // namespace

std::unordered_map<const ir::Node*, QConfigAny> generate_qconfig_map(const ir::GraphModule& gm,
                                                                     const QConfigMapping& mapping) {
  const QConfigAny& global = mapping.global_qconfig();
  std::map<std::string, std::map<std::string, int64_t>> next_index;  // scope path -> object type -> count
  std::unordered_map<const ir::Node*, QConfigAny> result;
  for (const ir::Node* node : gm.graph().nodes()) {
    QConfigAny qconfig;
    const std::string& target = node->target();
    ir::NodeScope scope = ir::node_scope(*node);
    switch (node->op()) {
      case ir::Opcode::kGetAttr: {
        std::string owner = target.substr(0, target.rfind('.') == std::string::npos ? 0 : target.rfind('.'));
        qconfig = mapping.module_type_or_name_qconfig(module_type_at(gm, owner), owner, global);
        break;
      }
      case ir::Opcode::kCallFunction: {
        QConfigAny own = mapping.object_type_qconfig(target, global);
        qconfig = mapping.module_type_or_name_qconfig(scope.module_type, scope.module_path, own);
        int64_t index = next_index[scope.module_path][target]++;
        qconfig = mapping.module_name_object_type_order_qconfig(scope.module_path, target, index, qconfig);
        break;
      }
      case ir::Opcode::kCallMethod:
        qconfig = mapping.module_type_or_name_qconfig(target, scope.module_path, global);
        qconfig = mapping.module_type_or_name_qconfig(scope.module_type, scope.module_path, qconfig);
        break;
      case ir::Opcode::kCallModule: {
        std::string type = module_type_at(gm, target);
        qconfig = mapping.module_type_or_name_qconfig(type, target, global);
        std::string parent = target.substr(0, target.rfind('.') == std::string::npos ? 0 : target.rfind('.'));
        int64_t index = next_index[parent][type]++;
        qconfig = mapping.module_name_object_type_order_qconfig(parent, type, index, qconfig);
        break;
      }
      default: break;
    }
    result.emplace(node, std::move(qconfig));
  }
  return result;
}

}  // namespace qfx::quant
