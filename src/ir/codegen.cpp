// FX's CodeGen._gen_python_code: one statement per node, operators printed as
// Python operators (`add = x + y`), attribute paths as `self.a.b` (or
// `getattr(self.a, "0")` for non-identifiers), and after each statement the
// values whose last use it was are set to None (`;  x = None`).

#include "qfx/ir/graph.h"
#include "qfx/ir/op_names.h"
#include "qfx/ir/printer.h"

#include <c10/util/Exception.h>

#include <array>
#include <cctype>
#include <unordered_map>

namespace qfx::ir {
namespace {

struct OperatorForm {
  const char* name;
  const char* form;  // '{}' marks the operands
};

// FX's magic_methods (reflectable ones included) and inplace_methods.
constexpr std::array<OperatorForm, 24> kMagicMethods{{
    {"add", "{} + {}"},  {"sub", "{} - {}"}, {"mul", "{} * {}"},  {"floordiv", "{} // {}"}, {"truediv", "{} / {}"},
    {"div", "{} / {}"},  {"mod", "{} % {}"}, {"pow", "{} ** {}"}, {"lshift", "{} << {}"},   {"rshift", "{} >> {}"},
    {"and_", "{} & {}"}, {"or_", "{} | {}"}, {"xor", "{} ^ {}"},  {"getitem", "{}[{}]"},    {"matmul", "{} @ {}"},
    {"eq", "{} == {}"},  {"ne", "{} != {}"}, {"lt", "{} < {}"},   {"gt", "{} > {}"},        {"le", "{} <= {}"},
    {"ge", "{} >= {}"},  {"pos", "+{}"},     {"neg", "-{}"},      {"invert", "~{}"},
}};

constexpr std::array<OperatorForm, 14> kInplaceMethods{{
    {"iadd", "{} += {}"},
    {"iand", "{} &= {}"},
    {"ifloordiv", "{} //= {}"},
    {"ilshift", "{} <<= {}"},
    {"imod", "{} %= {}"},
    {"imul", "{} *= {}"},
    {"imatmul", "{} @= {}"},
    {"ior", "{} |= {}"},
    {"ipow", "{} **= {}"},
    {"irshift", "{} >>= {}"},
    {"isub", "{} -= {}"},
    {"itruediv", "{} /= {}"},
    {"ixor", "{} ^= {}"},
    {"setitem", "{}[{}] = {}"},
}};

template <size_t N>
const char* find_form(const std::array<OperatorForm, N>& table, const std::string& target) {
  if (target.rfind("operator.", 0) != 0) return nullptr;
  std::string name = target.substr(9);
  for (const auto& row : table) {
    if (name == row.name) return row.form;
  }
  return nullptr;
}

std::string fill_form(const char* form, const std::vector<Argument>& args) {
  std::string out;
  size_t next = 0;
  for (const char* p = form; *p != '\0'; ++p) {
    if (p[0] == '{' && p[1] == '}') {
      TORCH_CHECK(next < args.size(), "codegen: operator ", form, " is missing operands");
      out += format_argument(args[next++], false);
      ++p;
    } else {
      out += *p;
    }
  }
  return out;
}

/// An index in subscript syntax: `a:b:c` for slices (None parts left out),
/// `...` for Ellipsis, tuples as comma-separated items.
std::string format_subscript(const Argument& index) {
  if (index.kind() == Argument::Kind::kEllipsis) return "...";
  if (index.kind() == Argument::Kind::kSlice) {
    const auto& parts = index.items();
    std::string out = parts[0].is_none() ? "" : format_argument(parts[0], false);
    out += ":" + (parts[1].is_none() ? "" : format_argument(parts[1], false));
    if (!parts[2].is_none()) out += ":" + format_argument(parts[2], false);
    return out;
  }
  if (index.kind() != Argument::Kind::kTuple) return format_argument(index, false);
  std::string out;
  for (const Argument& item : index.items()) out += (out.empty() ? "" : ", ") + format_subscript(item);
  return out;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// FX's _format_target: `self.layer1` then `getattr(..., "0")` for non-identifiers.
std::string format_target(const std::string& base, const std::string& target) {
  std::string out = base;
  size_t start = 0;
  while (start <= target.size()) {
    size_t dot = target.find('.', start);
    std::string elem = target.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    out = is_identifier(elem) ? out + "." + elem : "getattr(" + out + ", \"" + elem + "\")";
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return out;
}

std::string format_call_args(const std::vector<Argument>& args, size_t first, const Kwargs& kwargs) {
  std::string out;
  for (size_t i = first; i < args.size(); ++i) {
    if (!out.empty()) out += ", ";
    out += format_argument(args[i], false);
  }
  for (const auto& [key, value] : kwargs) {
    if (!out.empty()) out += ", ";
    out += key + " = " + format_argument(value, false);
  }
  return out;
}

class CodeWriter {
 public:
  CodeWriter(const Graph& graph, std::string root, const CodegenHooks& hooks)
      : graph_(graph), root_(std::move(root)), hooks_(hooks) {
    for (Node* n : graph.nodes()) globals_.reserve(n->name());
  }
  std::string write();

 private:
  std::string function_name(const std::string& target);
  std::string statement(const Node& node);
  std::string call_function(const Node& node);
  std::string free_values(const Node& node);
  /// `: TYPE` after a placeholder's argument, from hooks_.placeholder_type.
  std::string annotation(const Node& node) const;

  const Graph& graph_;
  std::string root_;
  const CodegenHooks& hooks_;
  Namespace globals_;
  std::unordered_map<std::string, std::string> global_names_;
  std::unordered_map<const Node*, std::vector<const Node*>> last_uses_;
  std::vector<std::string> free_vars_;
};

std::string CodeWriter::function_name(const std::string& target) {
  // torch functions keep their qualified name, builtins their bare name; any
  // other function becomes a global named after it, as FX's add_global does.
  if (target.rfind("torch.", 0) == 0 || target.find('.') == std::string::npos) return target;
  auto it = global_names_.find(target);
  if (it != global_names_.end()) return it->second;
  return global_names_[target] = globals_.create_name(target);
}

std::string CodeWriter::call_function(const Node& node) {
  const std::string& target = node.target();
  const auto& args = node.args();
  if (hooks_.subscript_syntax && target == op::kGetitem && args.size() == 2) {
    return node.name() + " = " + format_argument(args[0], false) + "[" + format_subscript(args[1]) + "]";
  }
  if (const char* form = find_form(kMagicMethods, target)) {
    return node.name() + " = " + fill_form(form, args);
  }
  if (const char* form = find_form(kInplaceMethods, target)) {
    std::string operation = fill_form(form, args);
    if (hooks_.subscript_syntax && target == "operator.setitem" && args.size() == 3) {
      operation =
          format_argument(args[0], false) + "[" + format_subscript(args[1]) + "] = " + format_argument(args[2], false);
    }
    std::string separator = hooks_.one_statement_per_line ? "\n" : ";  ";
    return operation + separator + node.name() + " = " + format_argument(args.at(0), false);
  }
  if (target == op::kGetattr && args.size() == 2 && args[1].kind() == Argument::Kind::kString &&
      is_identifier(args[1].to_string())) {
    return node.name() + " = " + format_target(format_argument(args[0], false), args[1].to_string());
  }
  return node.name() + " = " + function_name(target) + "(" + format_call_args(args, 0, node.kwargs()) + ")";
}

std::string CodeWriter::statement(const Node& node) {
  const auto& args = node.args();
  switch (node.op()) {
    case Opcode::kPlaceholder:
      free_vars_.push_back(node.target() + annotation(node) +
                           (args.empty() ? "" : " = " + format_argument(args[0], false)));
      return node.name() == node.target() ? "" : node.name() + " = " + node.target();
    case Opcode::kCallMethod:
      return node.name() + " = " + format_target(format_argument(args.at(0), false), node.target()) + "(" +
             format_call_args(args, 1, node.kwargs()) + ")";
    case Opcode::kCallFunction: return call_function(node);
    case Opcode::kCallModule:
      if (hooks_.call_module) {
        std::vector<std::string> printed;
        for (const Argument& a : args) printed.push_back(format_argument(a, false));
        return node.name() + " = " + hooks_.call_module(node, printed);
      }
      return node.name() + " = " + format_target(root_, node.target()) + "(" +
             format_call_args(args, 0, node.kwargs()) + ")";
    case Opcode::kGetAttr: return node.name() + " = " + format_target(root_, node.target());
    case Opcode::kOutput: return "return " + format_argument(args.at(0), false);
  }
  return "";
}

std::string CodeWriter::annotation(const Node& node) const {
  std::string type = hooks_.placeholder_type ? hooks_.placeholder_type(node) : "";
  return type.empty() ? "" : ": " + type;
}

std::string CodeWriter::free_values(const Node& node) {
  auto it = last_uses_.find(&node);
  if (node.op() == Opcode::kOutput || it == last_uses_.end() || !hooks_.release_values) return "\n";
  std::string out = ";  ";
  for (const Node* dead : it->second) out += dead->name() + " = ";
  return out + "None\n";
}

std::string CodeWriter::write() {
  // Walking backwards, the first use seen of a value is its last use.
  std::unordered_map<const Node*, const Node*> last_user;
  for (Node* user = graph_.last(); user != nullptr; user = user->prev()) {
    auto note = [&](Node* used) {
      if (last_user.emplace(used, user).second) last_uses_[user].push_back(used);
    };
    for (const Argument& a : user->args()) for_each_node(a, note);
    for (const auto& kv : user->kwargs()) for_each_node(kv.second, note);
  }
  std::string body;
  for (Node* node : graph_.nodes()) {
    std::string line = statement(*node);
    if (node->op() == Opcode::kPlaceholder) {
      if (!line.empty()) body += line + "\n";
      continue;
    }
    body += line + free_values(*node);
  }
  if (body.empty()) body = "pass\n";
  std::string params = "self";
  for (const std::string& v : free_vars_) params += ", " + v;
  std::string code;
  size_t start = 0;
  while (true) {
    size_t end = body.find('\n', start);
    code += "    " + body.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (end == std::string::npos) break;
    code += "\n";
    start = end + 1;
  }
  return "\n\n\ndef forward(" + params + "):\n" + code;
}

}  // namespace

std::string python_code(const Graph& graph, const std::string& root_module) {
  return CodeWriter(graph, root_module, CodegenHooks()).write();
}

std::string python_code(const Graph& graph, const std::string& root_module, const CodegenHooks& hooks) {
  return CodeWriter(graph, root_module, hooks).write();
}

std::string Graph::python_code(const std::string& root_module) const {
  return qfx::ir::python_code(*this, root_module);
}

}  // namespace qfx::ir
