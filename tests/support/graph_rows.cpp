#include "graph_rows.h"

#include "fixtures.h"

#include "qfx/ir/graph_module.h"
#include "qfx/ir/module_registry.h"
#include "qfx/ir/node.h"
#include "qfx/quant/observer_base.h"

#include <ATen/ATen.h>

#include <cstdio>

namespace qfx::test {

std::vector<std::string> node_rows(const ir::Graph& graph) {
  std::vector<std::string> rows;
  for (const ir::Node* n : graph.nodes())
    rows.push_back(n->name() + " " + ir::opcode_name(n->op()) + " " + n->target());
  return rows;
}

std::vector<std::string> node_rows(const nlohmann::json& record) {
  std::vector<std::string> rows;
  for (const auto& n : record["nodes"]) {
    rows.push_back(n["name"].get<std::string>() + " " + n["op"].get<std::string>() + " " +
                   n["target"].get<std::string>());
  }
  return rows;
}

namespace {

std::string exact(double value) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

}  // namespace

std::map<std::string, std::string> observer_rows(const ir::GraphModule& gm) {
  std::map<std::string, std::string> rows;
  std::map<const torch::nn::Module*, std::string> groups;
  for (const ir::Node* n : gm.graph().nodes()) {
    if (n->op() != ir::Opcode::kCallModule) continue;
    auto obs = std::dynamic_pointer_cast<quant::ActivationPostProcess>(gm.get_submodule(n->target()));
    if (!obs) continue;
    std::string type = ir::module_type_name(*obs);
    std::string row = type.substr(type.rfind('.') + 1) + " " + groups.emplace(obs.get(), n->target()).first->second;
    if (type.find("PlaceholderObserver") == std::string::npos) {
      quant::QParams q = obs->calculate_qparams();
      for (const at::Tensor& t : {q.scale, q.zero_point}) {
        at::Tensor flat = t.to(at::kDouble).reshape(-1).contiguous();
        for (int64_t i = 0; i < flat.numel(); ++i) row += " " + exact(flat.data_ptr<double>()[i]);
      }
    }
    rows[n->target()] = row;
  }
  return rows;
}

std::map<std::string, std::string> observer_rows(const nlohmann::json& observers) {
  std::map<std::string, std::string> rows;
  for (const auto& [name, obs] : observers.items()) {
    std::string row = obs["type"].get<std::string>() + " " + obs["group"].get<std::string>();
    for (const char* key : {"scale", "zero_point"}) {
      if (!obs.contains(key)) continue;
      for (const auto& hex : obs[key]) row += " " + exact(test::from_hex(hex));
    }
    rows[name] = row;
  }
  return rows;
}

}  // namespace qfx::test
