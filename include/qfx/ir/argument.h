#pragma once
/// \file
/// Argument: one argument of a Node, as in torch.fx — another Node, a Python
/// constant (None, bool, int, float, str), a torch dtype, layout or memory
/// format, or a list, tuple or slice of arguments.

#include <c10/core/Layout.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace qfx::ir {

class Node;

/// The value of one node argument. A recursive variant; copyable, comparable.
///
/// Example:
/// \code
///   Argument a = Argument::tuple({conv_node, 1, c10::ScalarType::QUInt8});
///   a.items()[0].to_node();  // conv_node
/// \endcode
class Argument {
 public:
  /// What an Argument holds.
  enum class Kind {
    kNone,
    kNode,
    kBool,
    kInt,
    kDouble,
    kString,
    kDtype,
    kLayout,
    kMemoryFormat,
    kList,
    kTuple,
    kSlice,
    kEllipsis
  };
  /// Items of a list, tuple or slice (start, stop, step).
  using Items = std::vector<Argument>;

  /// Python `None`.
  Argument() = default;
  Argument(Node* node);               // NOLINT: implicit by design, as in FX
  Argument(bool value);               // NOLINT
  Argument(int value);                // NOLINT
  Argument(int64_t value);            // NOLINT
  Argument(double value);             // NOLINT
  Argument(const char* value);        // NOLINT
  Argument(std::string value);        // NOLINT
  Argument(c10::ScalarType value);    // NOLINT
  Argument(c10::Layout value);        // NOLINT
  Argument(c10::MemoryFormat value);  // NOLINT

  /// A Python list `[items...]`.
  static Argument list(Items items);
  /// A Python tuple `(items...)`.
  static Argument tuple(Items items);
  /// A Python `slice(start, stop, step)`.
  static Argument slice(Argument start, Argument stop, Argument step);
  /// Python `Ellipsis` (`...`).
  static Argument ellipsis();

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_node() const { return kind_ == Kind::kNode; }
  /// True for lists, tuples and slices (the kinds with items).
  bool has_items() const;

  /// Accessors; each checks the kind and raises c10::Error on a mismatch.
  Node* to_node() const;
  bool to_bool() const;
  int64_t to_int() const;
  /// A float, or an int widened to double.
  double to_double() const;
  const std::string& to_string() const;
  c10::ScalarType to_dtype() const;
  c10::Layout to_layout() const;
  c10::MemoryFormat to_memory_format() const;
  const Items& items() const;

  bool operator==(const Argument& other) const;
  bool operator!=(const Argument& other) const { return !(*this == other); }

 private:
  using Value = std::variant<std::monostate, Node*, bool, int64_t, double, std::string, c10::ScalarType, c10::Layout,
                             c10::MemoryFormat, Items>;
  Argument(Kind kind, Value value) : kind_(kind), value_(std::move(value)) {}

  Kind kind_ = Kind::kNone;
  Value value_;
};

/// Keyword arguments in insertion order, as a Python dict keeps them.
using Kwargs = std::vector<std::pair<std::string, Argument>>;

/// Name of an Argument kind, for error messages ("int", "Node", ...).
const char* kind_name(Argument::Kind kind);

/// Calls `fn` on every Node inside `arg`, depth first, in order (FX `map_arg`).
void for_each_node(const Argument& arg, const std::function<void(Node*)>& fn);

/// Returns `arg` with every Node replaced by `fn(node)`.
Argument map_nodes(const Argument& arg, const std::function<Argument(Node*)>& fn);

}  // namespace qfx::ir
