// parse_graph: a recursive-descent reader of the IR text form, one node per
// line. Arguments use Python literal syntax; `%name` (or a bare name after
// `return`) refers to an earlier node.

#include "qfx/ir/parser.h"

#include "qfx/ir/graph.h"
#include "qfx/ir/python_literals.h"

#include <c10/util/Exception.h>

#include <cctype>
#include <cmath>
#include <unordered_map>

namespace qfx::ir {
namespace {

class LineParser {
 public:
  LineParser(std::string_view line, size_t line_no, const std::unordered_map<std::string, Node*>& nodes)
      : text_(line), line_no_(line_no), nodes_(nodes) {}

  [[noreturn]] void fail(const std::string& what) const {
    TORCH_CHECK(false, "parse_graph: line ", line_no_, ", column ", pos_ + 1, ": ", what, "\n  ", text_);
  }
  void skip_space() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }
  bool at_end() {
    skip_space();
    return pos_ >= text_.size();
  }
  bool accept(std::string_view token) {
    skip_space();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  void expect(std::string_view token) {
    if (!accept(token)) fail("expected '" + std::string(token) + "'");
  }
  std::string until(char stop) {
    size_t end = text_.find(stop, pos_);
    if (end == std::string_view::npos) fail(std::string("expected '") + stop + "'");
    std::string out(text_.substr(pos_, end - pos_));
    pos_ = end;
    return out;
  }
  std::string identifier() {
    skip_space();
    size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_' || text_[pos_] == '.')) {
      ++pos_;
    }
    if (start == pos_) fail("expected a name");
    return std::string(text_.substr(start, pos_ - start));
  }

  Argument value(bool bare_names_are_nodes);
  Argument::Items sequence(char close, bool bare_names_are_nodes, bool* trailing_comma);
  Kwargs kwargs();

 private:
  Argument node_ref(const std::string& name);
  Argument number();
  Argument string_literal();
  Argument named_value(const std::string& name, bool bare_names_are_nodes);

  std::string_view text_;
  size_t pos_ = 0;
  size_t line_no_;
  const std::unordered_map<std::string, Node*>& nodes_;
};

Argument LineParser::node_ref(const std::string& name) {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) fail("unknown node %" + name);
  return it->second;
}

Argument LineParser::number() {
  size_t start = pos_;
  if (text_[pos_] == '-' || text_[pos_] == '+') ++pos_;
  if (accept("inf")) return (text_[start] == '-' ? -1.0 : 1.0) * HUGE_VAL;
  bool is_float = false;
  auto part_of_number = [this](char c) {
    bool exponent_sign = (c == '-' || c == '+') && (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E');
    return std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' || exponent_sign;
  };
  while (pos_ < text_.size() && part_of_number(text_[pos_])) {
    is_float = is_float || !std::isdigit(static_cast<unsigned char>(text_[pos_]));
    ++pos_;
  }
  std::string token(text_.substr(start, pos_ - start));
  try {
    return is_float ? Argument(std::stod(token)) : Argument(int64_t{std::stoll(token)});
  } catch (const std::exception&) {
    fail("bad number '" + token + "'");
  }
}

Argument LineParser::string_literal() {
  char quote = text_[pos_];
  size_t end = pos_ + 1;
  while (end < text_.size() && text_[end] != quote) end += text_[end] == '\\' ? 2 : 1;
  if (end >= text_.size()) fail("unterminated string");
  auto parsed = parse_python_str(text_.substr(pos_, end + 1 - pos_));
  if (!parsed) fail("bad string literal");
  pos_ = end + 1;
  return *parsed;
}

Argument LineParser::named_value(const std::string& name, bool bare_names_are_nodes) {
  if (name == "None") return {};
  if (name == "True") return true;
  if (name == "False") return false;
  if (name == "Ellipsis") return Argument::ellipsis();
  if (name == "nan") return std::nan("");
  if (name == "inf") return HUGE_VAL;
  if (name == "slice") {
    expect("(");
    bool comma = false;
    auto items = sequence(')', bare_names_are_nodes, &comma);
    if (items.size() != 3) fail("slice takes 3 arguments");
    return Argument::slice(items[0], items[1], items[2]);
  }
  if (auto dtype = parse_dtype(name)) return *dtype;
  if (auto layout = parse_layout(name)) return *layout;
  if (auto format = parse_memory_format(name)) return *format;
  if (bare_names_are_nodes) return node_ref(name);
  fail("unknown name '" + name + "'");
}

Argument LineParser::value(bool bare_names_are_nodes) {
  skip_space();
  if (pos_ >= text_.size()) fail("expected a value");
  char c = text_[pos_];
  if (c == '%') {
    ++pos_;
    return node_ref(identifier());
  }
  if (c == '\'' || c == '"') return string_literal();
  if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+') return number();
  if (c == '[') {
    ++pos_;
    bool comma = false;
    return Argument::list(sequence(']', bare_names_are_nodes, &comma));
  }
  if (c == '(') {
    ++pos_;
    bool comma = false;
    auto items = sequence(')', bare_names_are_nodes, &comma);
    if (items.size() == 1 && !comma) return items[0];  // a parenthesized value
    return Argument::tuple(std::move(items));
  }
  return named_value(identifier(), bare_names_are_nodes);
}

Argument::Items LineParser::sequence(char close, bool bare_names_are_nodes, bool* trailing_comma) {
  Argument::Items items;
  std::string closing(1, close);
  while (!accept(closing)) {
    items.push_back(value(bare_names_are_nodes));
    *trailing_comma = accept(",");
    if (!*trailing_comma) {
      expect(closing);
      break;
    }
  }
  return items;
}

Kwargs LineParser::kwargs() {
  Kwargs out;
  expect("{");
  while (!accept("}")) {
    std::string key = identifier();
    expect(":");
    out.emplace_back(key, value(false));
    if (!accept(",")) {
      expect("}");
      break;
    }
  }
  return out;
}

struct NodeLine {
  std::string name;
  Opcode op;
  std::string target;
  std::vector<Argument> args;
  Kwargs kwargs;
};

NodeLine parse_node_line(LineParser& p) {
  NodeLine line;
  p.expect("%");
  line.name = p.identifier();
  p.expect(":");
  p.until('[');  // an optional type annotation
  p.expect("[");
  p.until(']');  // num_users / #users: derived, not read
  p.expect("]");
  p.expect("=");
  std::string opcode = p.identifier();
  auto op = parse_opcode(opcode);
  if (!op || *op == Opcode::kOutput) p.fail("unknown opcode '" + opcode + "'");
  line.op = *op;
  p.expect("[target=");
  line.target = p.until(']');
  p.expect("]");
  if (line.op == Opcode::kPlaceholder && p.accept("(default=")) {
    line.args.push_back(p.value(false));
    p.expect(")");
  } else if (line.op != Opcode::kPlaceholder && line.op != Opcode::kGetAttr) {
    p.expect("(args = (");
    bool comma = false;
    line.args = p.sequence(')', false, &comma);
    p.expect(", kwargs = ");
    line.kwargs = p.kwargs();
    p.expect(")");
  }
  if (!p.at_end()) p.fail("unexpected text after the node");
  return line;
}

}  // namespace

std::unique_ptr<Graph> parse_graph(std::string_view text) {
  auto graph = std::make_unique<Graph>();
  std::unordered_map<std::string, Node*> nodes;
  size_t line_no = 0;
  bool seen_header = false, seen_output = false;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    std::string_view line = text.substr(start, end == std::string_view::npos ? text.npos : end - start);
    start = end == std::string_view::npos ? text.size() + 1 : end + 1;
    ++line_no;
    LineParser p(line, line_no, nodes);
    if (p.at_end()) continue;
    if (!seen_header) {
      p.expect("graph(");
      seen_header = true;
      continue;
    }
    if (seen_output) p.fail("text after the output ('return' ends a graph)");
    if (p.accept("return ")) {
      seen_output = true;
      graph->output(p.value(true));
      if (!p.at_end()) p.fail("unexpected text after the output");
      continue;
    }
    NodeLine n = parse_node_line(p);
    if (nodes.count(n.name) > 0) p.fail("node %" + n.name + " is defined twice");
    Node* node = graph->create_node(n.op, n.target, std::move(n.args), std::move(n.kwargs), n.name);
    if (node->name() != n.name) p.fail("'" + n.name + "' is not a legal node name");
    nodes[n.name] = node;
  }
  TORCH_CHECK(seen_header, "parse_graph: no 'graph():' header");
  return graph;
}

}  // namespace qfx::ir
