#pragma once
/// \file
/// Node: one operation of a Graph, as `torch.fx.Node`. A node has an opcode, a
/// target (module path, attribute path, function or method name), arguments and
/// keyword arguments, and the list of nodes that use its value (`users`), which
/// `set_args`/`set_kwargs` keep right.

#include "qfx/ir/argument.h"

#include <any>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qfx::ir {

class Graph;

/// The six FX opcodes.
enum class Opcode {
  kPlaceholder,   ///< a forward() input; target = argument name
  kGetAttr,       ///< a parameter, buffer or attribute; target = dotted path
  kCallFunction,  ///< a free function; target = qualified name (`torch.add`)
  kCallModule,    ///< a submodule's forward; target = dotted module path
  kCallMethod,    ///< a method of args[0]; target = method name (`view`)
  kOutput,        ///< the return value; args[0] = returned structure
};

/// FX spelling of an opcode: "placeholder", "call_module", ...
const char* opcode_name(Opcode op);
/// Reads an FX opcode spelling.
std::optional<Opcode> parse_opcode(std::string_view name);

/// Free-form per-node data (FX `node.meta`), e.g. the qconfig of a node.
using Meta = std::map<std::string, std::any>;

/// The module whose forward() created a node, as PyTorch's QuantizationTracer
/// records it (`node_name_to_scope`): for a call_module node the module
/// itself, else the innermost module being traced. The root has path "" and
/// type "". Stored in `meta()[kScopeMeta]`.
struct NodeScope {
  std::string module_path;
  std::string module_type;  ///< PyTorch name: `torch.nn.Conv2d`, `torchvision.models.resnet.BasicBlock`
};
inline constexpr const char* kScopeMeta = "scope";

/// TorchScript type of a placeholder imported from a scripted or traced
/// forward (`Tensor`, `List[Tensor]`), a std::string in
/// `meta()[kInputTypeMeta]`; export annotates the argument with it.
inline constexpr const char* kInputTypeMeta = "input_type";

/// The dtype of a node's tensor value when an importer knows it is not a
/// floating type (an `arange`'s positions, a bool mask), a c10::ScalarType in
/// `meta()[kValueDtypeMeta]`: prepare neither observes nor quantizes it.
inline constexpr const char* kValueDtypeMeta = "value_dtype";

/// One operation in a Graph. Created and destroyed only by its Graph.
class Node {
 public:
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const std::string& name() const { return name_; }
  Opcode op() const { return op_; }
  const std::string& target() const { return target_; }
  /// Changes the target (e.g. after moving a submodule).
  void set_target(std::string target) { target_ = std::move(target); }

  const std::vector<Argument>& args() const { return args_; }
  const Kwargs& kwargs() const { return kwargs_; }
  /// The keyword argument `key`, or nullptr.
  const Argument* kwarg(std::string_view key) const;

  /// Replaces the arguments; the users of old and new input nodes follow.
  void set_args(std::vector<Argument> args);
  /// Replaces the keyword arguments; users follow.
  void set_kwargs(Kwargs kwargs);
  /// Replaces argument `index`.
  void set_arg(size_t index, Argument value);
  /// Sets (or adds, at the end) keyword argument `key`.
  void set_kwarg(const std::string& key, Argument value);

  /// Nodes that use this node's value, in the order FX keeps them.
  const std::vector<Node*>& users() const { return users_; }
  /// Distinct nodes among args and kwargs, in order of first appearance.
  std::vector<Node*> input_nodes() const;
  /// Whether `node` is among args or kwargs (no allocation).
  bool has_input(const Node* node) const;

  /// Next and previous node in the graph; nullptr at the ends.
  Node* next() const { return next_; }
  Node* prev() const { return prev_; }
  /// Moves `node` (of the same graph) to just before this node.
  void prepend(Node* node);
  /// Moves `node` (of the same graph) to just after this node.
  void append(Node* node);

  /// Makes every user for which `filter` holds use `replacement` instead of
  /// this node (all users without a filter); returns the users changed.
  std::vector<Node*> replace_all_uses_with(Node* replacement, const std::function<bool(Node*)>& filter = {});
  /// Replaces `old_input` by `new_input` in this node's arguments.
  void replace_input_with(Node* old_input, Node* new_input);

  Meta& meta() { return meta_; }
  const Meta& meta() const { return meta_; }
  Graph& owning_graph() const { return *graph_; }

  /// The IR text line of this node, e.g.
  /// `%linear : [num_users=1] = call_module[target=linear](args = (%x,), kwargs = {})`.
  std::string format() const;

 private:
  friend class Graph;
  Node(Graph* graph, std::string name, Opcode op, std::string target);
  void unlink_inputs();
  void link_inputs();

  Graph* graph_;
  std::string name_;
  Opcode op_;
  std::string target_;
  std::vector<Argument> args_;
  Kwargs kwargs_;
  std::vector<Node*> users_;
  Node* prev_ = nullptr;
  Node* next_ = nullptr;
  Meta meta_;
};

/// The scope in `node`'s meta (kScopeMeta); the root's ("", "") when it has none.
NodeScope node_scope(const Node& node);

}  // namespace qfx::ir
