// Argument: the recursive value type of node arguments. Kind checks raise
// c10::Error naming the expected and actual kinds.

#include "qfx/ir/argument.h"

#include <c10/util/Exception.h>

namespace qfx::ir {

Argument::Argument(Node* node) : kind_(Kind::kNode), value_(node) {
  TORCH_CHECK(node != nullptr, "Argument: null Node; use Argument() for None");
}
Argument::Argument(bool value) : kind_(Kind::kBool), value_(value) {}
Argument::Argument(int value) : kind_(Kind::kInt), value_(int64_t{value}) {}
Argument::Argument(int64_t value) : kind_(Kind::kInt), value_(value) {}
Argument::Argument(double value) : kind_(Kind::kDouble), value_(value) {}
Argument::Argument(const char* value) : kind_(Kind::kString), value_(std::string(value)) {}
Argument::Argument(std::string value) : kind_(Kind::kString), value_(std::move(value)) {}
Argument::Argument(c10::ScalarType value) : kind_(Kind::kDtype), value_(value) {}
Argument::Argument(c10::Layout value) : kind_(Kind::kLayout), value_(value) {}
Argument::Argument(c10::MemoryFormat value) : kind_(Kind::kMemoryFormat), value_(value) {}

Argument Argument::list(Items items) { return {Kind::kList, std::move(items)}; }
Argument Argument::tuple(Items items) { return {Kind::kTuple, std::move(items)}; }
Argument Argument::slice(Argument start, Argument stop, Argument step) {
  return {Kind::kSlice, Items{std::move(start), std::move(stop), std::move(step)}};
}
Argument Argument::ellipsis() { return {Kind::kEllipsis, std::monostate{}}; }

bool Argument::has_items() const { return kind_ == Kind::kList || kind_ == Kind::kTuple || kind_ == Kind::kSlice; }

const char* kind_name(Argument::Kind kind) {
  switch (kind) {
    case Argument::Kind::kNone: return "None";
    case Argument::Kind::kNode: return "Node";
    case Argument::Kind::kBool: return "bool";
    case Argument::Kind::kInt: return "int";
    case Argument::Kind::kDouble: return "float";
    case Argument::Kind::kString: return "str";
    case Argument::Kind::kDtype: return "dtype";
    case Argument::Kind::kLayout: return "layout";
    case Argument::Kind::kMemoryFormat: return "memory_format";
    case Argument::Kind::kList: return "list";
    case Argument::Kind::kTuple: return "tuple";
    case Argument::Kind::kSlice: return "slice";
    case Argument::Kind::kEllipsis: return "Ellipsis";
  }
  return "?";
}

namespace {
void check_kind(Argument::Kind actual, Argument::Kind expected) {
  TORCH_CHECK(actual == expected, "Argument: expected ", kind_name(expected), ", got ", kind_name(actual));
}
}  // namespace

Node* Argument::to_node() const {
  check_kind(kind_, Kind::kNode);
  return std::get<Node*>(value_);
}
bool Argument::to_bool() const {
  check_kind(kind_, Kind::kBool);
  return std::get<bool>(value_);
}
int64_t Argument::to_int() const {
  check_kind(kind_, Kind::kInt);
  return std::get<int64_t>(value_);
}
double Argument::to_double() const {
  if (kind_ == Kind::kInt) return static_cast<double>(std::get<int64_t>(value_));
  check_kind(kind_, Kind::kDouble);
  return std::get<double>(value_);
}
const std::string& Argument::to_string() const {
  check_kind(kind_, Kind::kString);
  return std::get<std::string>(value_);
}
c10::ScalarType Argument::to_dtype() const {
  check_kind(kind_, Kind::kDtype);
  return std::get<c10::ScalarType>(value_);
}
c10::Layout Argument::to_layout() const {
  check_kind(kind_, Kind::kLayout);
  return std::get<c10::Layout>(value_);
}
c10::MemoryFormat Argument::to_memory_format() const {
  check_kind(kind_, Kind::kMemoryFormat);
  return std::get<c10::MemoryFormat>(value_);
}
const Argument::Items& Argument::items() const {
  TORCH_CHECK(has_items(), "Argument: expected list, tuple or slice, got ", kind_name(kind_));
  return std::get<Items>(value_);
}

bool Argument::operator==(const Argument& other) const { return kind_ == other.kind_ && value_ == other.value_; }

void for_each_node(const Argument& arg, const std::function<void(Node*)>& fn) {
  if (arg.is_node()) {
    fn(arg.to_node());
  } else if (arg.has_items()) {
    for (const Argument& item : arg.items()) for_each_node(item, fn);
  }
}

Argument map_nodes(const Argument& arg, const std::function<Argument(Node*)>& fn) {
  if (arg.is_node()) return fn(arg.to_node());
  if (!arg.has_items()) return arg;
  Argument::Items items;
  items.reserve(arg.items().size());
  for (const Argument& item : arg.items()) items.push_back(map_nodes(item, fn));
  switch (arg.kind()) {
    case Argument::Kind::kList: return Argument::list(std::move(items));
    case Argument::Kind::kTuple: return Argument::tuple(std::move(items));
    default: return Argument::slice(items[0], items[1], items[2]);
  }
}

}  // namespace qfx::ir
