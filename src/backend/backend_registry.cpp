// BackendRegistry: named fuser methods, fused-module constructors and
// getters; and how a config's fuser, root node and extra inputs are found.

#include "qfx/backend/backend_registry.h"

#include "qfx/backend/backend_config.h"

#include <c10/util/Exception.h>

#include <algorithm>

namespace qfx::backend {
namespace {

template <typename Fn>
void add_unique(std::unordered_map<std::string, Fn>& table, const std::string& name, Fn fn, const char* what) {
  TORCH_CHECK(fn, "BackendRegistry: the ", what, " \"", name, "\" is empty");
  bool inserted = table.emplace(name, std::move(fn)).second;
  TORCH_CHECK(inserted, "BackendRegistry: a ", what, " named \"", name, "\" is already registered");
}

template <typename Fn>
const Fn* find_in(const std::unordered_map<std::string, Fn>& table, const std::string& name) {
  auto it = table.find(name);
  return it == table.end() ? nullptr : &it->second;
}

}  // namespace

BackendRegistry& BackendRegistry::instance() {
  static BackendRegistry registry;
  return registry;
}

void BackendRegistry::add_fuser_method(const std::string& name, FuserMethod fn, bool concurrent) {
  add_unique(fuser_methods_, name, std::move(fn), "fuser method");
  if (concurrent) concurrent_fuser_methods_.insert(name);
}

void BackendRegistry::add_fused_module(const std::string& module_type, FusedModuleFactory factory) {
  add_unique(fused_modules_, pattern::OpCatalog::instance().resolve_module(module_type), std::move(factory),
             "fused module constructor");
}

void BackendRegistry::add_root_node_getter(const std::string& name, pattern::RootNodeGetter fn) {
  add_unique(root_node_getters_, name, std::move(fn), "root node getter");
}

void BackendRegistry::add_extra_inputs_getter(const std::string& name, pattern::ExtraInputsGetter fn) {
  add_unique(extra_inputs_getters_, name, std::move(fn), "extra inputs getter");
}

const FuserMethod* BackendRegistry::fuser_method(const std::string& name) const {
  return find_in(fuser_methods_, name);
}

const FusedModuleFactory* BackendRegistry::fused_module(const std::string& module_type) const {
  return find_in(fused_modules_, module_type);
}

const pattern::RootNodeGetter* BackendRegistry::root_node_getter(const std::string& name) const {
  return find_in(root_node_getters_, name);
}

const pattern::ExtraInputsGetter* BackendRegistry::extra_inputs_getter(const std::string& name) const {
  return find_in(extra_inputs_getters_, name);
}

bool BackendRegistry::fuser_method_is_concurrent(const std::string& name) const {
  return concurrent_fuser_methods_.count(name) > 0;
}

std::vector<std::string> BackendRegistry::fuser_method_names() const {
  std::vector<std::string> names;
  for (const auto& item : fuser_methods_) names.push_back(item.first);
  std::sort(names.begin(), names.end());
  return names;
}

FuserMethod fuser_of(const BackendPatternConfig& config) {
  const BackendRegistry& registry = BackendRegistry::instance();
  if (!config.fuser_method().empty()) return *registry.fuser_method(config.fuser_method());
  TORCH_CHECK(!config.fused_module().empty(), "pattern ", config.pattern().str(),
              " has neither a fuser_method nor a fused_module");
  const FusedModuleFactory* factory = registry.fused_module(config.fused_module());
  TORCH_CHECK(factory, "pattern ", config.pattern().str(), ": the fused module ", config.fused_module(),
              " has no registered constructor (BackendRegistry::add_fused_module)");
  return [factory](bool /*is_qat*/, const std::vector<FuserPart>& parts) {
    std::vector<FuserPart> ops;
    std::copy_if(parts.begin(), parts.end(), std::back_inserter(ops),
                 [](const FuserPart& p) { return p.op != pattern::kMatchAllNode; });
    return (*factory)(ops);
  };
}

ir::Node* root_node_of(const BackendPatternConfig& config, const pattern::PatternMatch& match) {
  if (config.root_node_getter().empty()) return match.node(config.pattern().default_root_index());
  return (*BackendRegistry::instance().root_node_getter(config.root_node_getter()))(match);
}

std::vector<ir::Argument> extra_inputs_of(const BackendPatternConfig& config, const pattern::PatternMatch& match) {
  if (config.extra_inputs_getter().empty()) return {};
  return (*BackendRegistry::instance().extra_inputs_getter(config.extra_inputs_getter()))(match);
}

}  // namespace qfx::backend
