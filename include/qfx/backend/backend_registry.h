#pragma once
/// \file
/// BackendRegistry: the functions a BackendConfig refers to by name — fuser
/// methods, constructors of fused modules, root-node getters and
/// extra-inputs getters. qfx registers PyTorch's (`fuse_conv_bn`,
/// `_conv_add_root_node_getter_left`, ...); users register their own before
/// naming them in a config, from C++ or JSON alike.
///
/// \code
///   // the tutorial's fuse_conv2d_relu, by another name
///   BackendRegistry::instance().add_fuser_method(
///       "my_fuse_conv_relu", [](bool is_qat, const std::vector<FuserPart>& parts) {
///         return qfx::nn::ConvReLU2d(parts[0].module, parts[1].module).ptr();
///       });
/// \endcode

#include "qfx/pattern/pattern.h"

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace torch::nn {
class Module;
}

namespace qfx::backend {

class BackendPatternConfig;

/// One matched pattern element handed to a fuser: the module of a
/// call_module node (PyTorch also passes a fresh ReLU module for
/// `torch.nn.functional.relu`), else null with the op's name (a function,
/// a method, or "MatchAllNode").
struct FuserPart {
  std::shared_ptr<torch::nn::Module> module;
  std::string op;
};

/// Builds the fused module from the parts of a match, in the pattern's
/// element order (forward order). `is_qat` is true under prepare_qat_fx.
using FuserMethod = std::function<std::shared_ptr<torch::nn::Module>(bool is_qat, const std::vector<FuserPart>& parts)>;

/// Constructs a fused module from its modules and ops in forward order (the
/// matched parts without MatchAllNode), as the Python class's constructor.
using FusedModuleFactory = std::function<std::shared_ptr<torch::nn::Module>(const std::vector<FuserPart>& parts)>;

/// The process-wide tables of named functions. Adding a name twice raises
/// c10::Error.
class BackendRegistry {
 public:
  static BackendRegistry& instance();

  /// `concurrent`: the method only builds a module from its parts (no state
  /// of its own), so fuse may call it on qfx's worker thread, for several
  /// matches at once; qfx's own fuser methods are.
  void add_fuser_method(const std::string& name, FuserMethod fn, bool concurrent = false);
  void add_fused_module(const std::string& module_type, FusedModuleFactory factory);
  void add_root_node_getter(const std::string& name, pattern::RootNodeGetter fn);
  void add_extra_inputs_getter(const std::string& name, pattern::ExtraInputsGetter fn);

  /// The registered function, or nullptr.
  const FuserMethod* fuser_method(const std::string& name) const;
  const FusedModuleFactory* fused_module(const std::string& module_type) const;
  const pattern::RootNodeGetter* root_node_getter(const std::string& name) const;
  const pattern::ExtraInputsGetter* extra_inputs_getter(const std::string& name) const;

  /// Whether the fuser method `name` was registered as concurrent.
  bool fuser_method_is_concurrent(const std::string& name) const;

  /// Registered names, sorted.
  std::vector<std::string> fuser_method_names() const;

 private:
  std::unordered_map<std::string, FuserMethod> fuser_methods_;
  std::unordered_set<std::string> concurrent_fuser_methods_;
  std::unordered_map<std::string, FusedModuleFactory> fused_modules_;
  std::unordered_map<std::string, pattern::RootNodeGetter> root_node_getters_;
  std::unordered_map<std::string, pattern::ExtraInputsGetter> extra_inputs_getters_;
};

/// The fuser of a config: its fuser method, or else one that constructs its
/// fused module from the non-MatchAllNode parts. Raises c10::Error when the
/// config has neither, or its fused module has no registered constructor.
FuserMethod fuser_of(const BackendPatternConfig& config);

/// The root node of a match: the config's root-node getter, or PyTorch's
/// default (Pattern::default_root_index).
ir::Node* root_node_of(const BackendPatternConfig& config, const pattern::PatternMatch& match);

/// The extra inputs of a match: the config's extra-inputs getter, or none.
std::vector<ir::Argument> extra_inputs_of(const BackendPatternConfig& config, const pattern::PatternMatch& match);

/// Registers backend's built-ins: the named functions the built-in
/// BackendConfigs refer to (onednn's conv-add root-node and extra-inputs
/// getters). Part of qfx::register_builtins() (qfx/builtins.h).
void register_builtins();

}  // namespace qfx::backend
