#pragma once
/// \file
/// QConfigMapping (torch.ao.quantization.QConfigMapping): which QConfig each
/// part of a model gets, and PyTorch's resolution rules for it.
///
/// Object types are named as PyTorch names them: module classes
/// (`torch.nn.Conv2d`, or a user class's Python name), functions
/// (`torch.nn.functional.relu`, `operator.add`) and method names (`reshape`).
///
/// Resolution, most specific first (PyTorch 1.13's `generate_qconfig_map`):
/// module_name_object_type_order > module_name (the name, then its nearest
/// ancestor) > module_name_regex (first registered match) > object_type >
/// global. A function or method takes the qconfig of the module whose
/// forward() calls it before its own object type.

#include "qfx/quant/qconfig.h"

#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace qfx::ir {
class GraphModule;
class Node;
}  // namespace qfx::ir

namespace re2 {
class RE2;
}

namespace qfx::quant {

/// A QConfigMapping; every setter replaces an earlier entry for the same key
/// and keeps its position, as PyTorch's ordered dicts do.
///
/// Example:
/// \code
///   QConfigMapping mapping = QConfigMapping()
///       .set_global(get_default_qconfig("onednn"))
///       .set_object_type("torch.nn.Linear", *qconfig_preset("default_dynamic_qconfig"))
///       .set_module_name("classifier", std::nullopt);  // stays float
/// \endcode
class QConfigMapping {
 public:
  struct RegexEntry {
    std::string pattern;
    std::shared_ptr<const re2::RE2> regex;  ///< RE2: linear time in the name's length
    QConfigAny qconfig;
  };
  struct OrderEntry {
    std::string module_name;
    std::string object_type;
    int64_t index;
    QConfigAny qconfig;
  };

  QConfigMapping& set_global(QConfigAny qconfig);
  QConfigMapping& set_object_type(const std::string& object_type, QConfigAny qconfig);
  /// Raises c10::Error for a pattern that is not a valid regex. Patterns
  /// are RE2's syntax (Python's `re` without backreferences and lookaround),
  /// matched as Python's `re.match` does: at the start of the name.
  QConfigMapping& set_module_name_regex(const std::string& pattern, QConfigAny qconfig);
  QConfigMapping& set_module_name(const std::string& module_name, QConfigAny qconfig);
  QConfigMapping& set_module_name_object_type_order(const std::string& module_name, const std::string& object_type,
                                                    int64_t index, QConfigAny qconfig);

  const QConfigAny& global_qconfig() const { return global_; }
  const std::vector<std::pair<std::string, QConfigAny>>& object_type_qconfigs() const { return object_types_; }
  const std::vector<RegexEntry>& module_name_regex_qconfigs() const { return regexes_; }
  const std::vector<std::pair<std::string, QConfigAny>>& module_name_qconfigs() const { return module_names_; }
  const std::vector<OrderEntry>& module_name_object_type_order_qconfigs() const { return orders_; }

  /// The object type's qconfig, else `fallback`.
  QConfigAny object_type_qconfig(const std::string& object_type, const QConfigAny& fallback) const;
  /// The first regex that matches the start of `module_name`, else `fallback`.
  QConfigAny module_name_regex_qconfig(const std::string& module_name, const QConfigAny& fallback) const;
  /// The qconfig of `module_name` or of its nearest ancestor, else `fallback`.
  QConfigAny module_name_qconfig(const std::string& module_name, const QConfigAny& fallback) const;
  /// PyTorch's maybe_adjust_qconfig_for_module_type_or_name.
  QConfigAny module_type_or_name_qconfig(const std::string& module_type, const std::string& module_name,
                                         const QConfigAny& fallback) const;
  /// PyTorch's maybe_adjust_qconfig_for_module_name_object_type_order.
  QConfigAny module_name_object_type_order_qconfig(const std::string& module_name, const std::string& object_type,
                                                   int64_t index, const QConfigAny& fallback) const;

 private:
  QConfigAny global_;
  std::vector<std::pair<std::string, QConfigAny>> object_types_;
  std::vector<RegexEntry> regexes_;
  std::vector<std::pair<std::string, QConfigAny>> module_names_;
  std::vector<OrderEntry> orders_;
};

/// PyTorch's `_FIXED_QPARAMS_OP_TO_OBSERVER`: the ops with a fixed output
/// range (sigmoid, tanh, hardsigmoid, softmax) and their FixedQParamsObserver.
const std::vector<std::pair<std::string, ObserverSpec>>& fixed_qparams_op_observers();

/// PyTorch's get_default_qconfig_mapping(backend, version=0).
QConfigMapping get_default_qconfig_mapping(const std::string& backend = "fbgemm");
/// PyTorch's get_default_qat_qconfig_mapping(backend, version=1).
QConfigMapping get_default_qat_qconfig_mapping(const std::string& backend = "fbgemm", int version = 1);

/// The qconfig of every node of a graph, as PyTorch's generate_qconfig_map:
/// call_module nodes by their module's type and path, functions and methods
/// by their target and the scope that created them (see ir::NodeScope),
/// get_attr nodes by their owner module; other nodes get None.
std::unordered_map<const ir::Node*, QConfigAny> generate_qconfig_map(const ir::GraphModule& gm,
                                                                     const QConfigMapping& mapping);

}  // namespace qfx::quant
