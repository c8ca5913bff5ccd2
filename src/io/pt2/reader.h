#pragma once
// ProgramReader: reads an exported program's nodes into an io::GraphBuilder
// (program_reader.cpp: nodes and values; program_arguments.cpp: arguments by
// schema name; program_leaves.cpp: leaf calls). Internal to src/io.

#include "archive.h"
#include "aten_calls.h"
#include "program_nodes.h"

#include "io/import/leaf_modules.h"

#include "qfx/io/graph_builder.h"

#include <ATen/core/function_schema.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace qfx::io::pt2 {

class ProgramReader {
 public:
  ProgramReader(const Archive& archive, ir::GraphModule& gm)
      : archive_(archive),
        graph_(archive.program.at("graph_module").at("graph")),
        b_(gm, [this](const std::string& what) { fail(what); }) {}

  /// Reads the whole program into the graph module.
  void read();

 private:
  /// x.size(d) nodes no node reads: sizes the program computed for a leaf's own use
  /// (an LSTM's initial state), which its call does not take.
  void drop_unused_sizes();

  [[noreturn]] void fail(const std::string& what) const;

  /// The last node that reads each value (graph outputs: after every node).
  void uses();

  /// Placeholders for the user's inputs; parameters, buffers and constants by name.
  void inputs();

  /// The output node: the user's outputs (one, or a tuple).
  void outputs();

  /// Reads the node at `i` (with the rest of its leaf call); the index of the next node.
  size_t read_from(const nlohmann::json& nodes, size_t i);

  /// The schema of `node`'s ATen op, found in LibTorch's registry.
  const c10::FunctionSchema& schema_of(const nlohmann::json& node, const c10::OperatorName& op);

  /// The node's arguments in schema order; absent ones at their default.
  std::vector<OpInput> op_inputs(const nlohmann::json& node, const c10::FunctionSchema& schema);

  /// A named value's graph argument; a parameter, buffer or constant becomes a get_attr at first use.
  ir::Argument value(const std::string& name);

  ir::Argument graph_argument(const nlohmann::json& argument, const c10::TypePtr& type);

  ir::Argument symbolic_item(const nlohmann::json& item);

  /// `_operator.<op>` on dynamic sizes as FX's operator.<op>.
  void read_size_arithmetic(const nlohmann::json& node, const std::string& op);

  /// One node outside any leaf.
  void read_node(const nlohmann::json& node, const std::vector<ModuleEntry>& stack);

  /// The value an in-place op writes (`out += x` as aten.add_), read as the op's out-of-place
  /// form (FX's); empty for other ops. An error for a write FX cannot express: into a view of
  /// another tensor (`x[i] = v`) or into a parameter or buffer.
  std::string written_value(const nlohmann::json& node, const c10::FunctionSchema& schema);

  /// What the program records of tensor `name` (dtype, sizes, ...), or nullptr.
  const nlohmann::json* tensor_value(const std::string& name) const;

  /// The last size of tensor `name` when the program records it as a number.
  c10::optional<int64_t> last_size(const std::string& name) const;

  /// The node's input `name` as the program gives it, or nullptr.
  static const nlohmann::json* given(const nlohmann::json& node, const std::string& name);

  /// Arguments of an op LibTorch 1.13 has no schema of, by the program's names (absent: None).
  NamedArgs program_args(const nlohmann::json& node);

  /// Arguments by schema name, read from the normalized `inputs`.
  NamedArgs schema_args(const nlohmann::json& node, const c10::FunctionSchema& schema,
                        const std::vector<OpInput>& inputs);

  /// `x[index] = v` (slices or selects of x, then fill_ or copy_ on the view) as FX's
  /// operator.setitem: a view only an assignment writes is recorded, not read; the write
  /// becomes setitem on its base. False for other nodes (program_writes.cpp).
  bool read_assignment(const nlohmann::json& node, const std::string& op, const NamedArgs& args);

  /// True when every reader of `value` writes through it: fill_ or copy_ into it, or a slice or
  /// select of it that is written through.
  bool written_through(const std::string& value) const;

  /// The values a node makes: its result, or getitems of it.
  void bind(const nlohmann::json& node, ir::Node* result);

  /// `name` is `node`'s value (its dtype recorded when it is not a floating type).
  void bind_value(const std::string& name, ir::Node* node);

  /// What one leaf call's nodes make and read.
  struct LeafRun {
    std::set<std::string> made;         ///< values its nodes make
    std::vector<std::string> args;      ///< tensors from outside it, in the order its nodes read them
    std::vector<std::string> escaping;  ///< values it makes that later nodes or the outputs read
    std::vector<detail::ProbedOp> ops;  ///< its ATen ops, for the leaf table
  };
  LeafRun leaf_run(const nlohmann::json& nodes, size_t begin, size_t end, const std::string& path);

  /// Nodes [begin, end) made by one call of the leaf stack[leaf].
  void leaf_call(const nlohmann::json& nodes, size_t begin, size_t end, const std::vector<ModuleEntry>& stack,
                 size_t leaf);

  /// The recurrent op (aten.lstm, aten.gru, aten.rnn_*) among nodes [begin, end), or nullptr.
  static const nlohmann::json* recurrent_op(const nlohmann::json& nodes, size_t begin, size_t end);

  /// FX's unpacking of a recurrent module's result: `out, (h, c) = self.lstm(x)`, `out, h = self.gru(x)`.
  void bind_recurrent(const nlohmann::json& op, ir::Node* call, const std::vector<std::string>& escaping);

  /// True when the program records `name` as a tensor (not a symbolic size).
  bool is_tensor(const std::string& name) const;

  /// True for a parameter, buffer or constant of the module at `path`.
  bool owned_by(const std::string& name, const std::string& path) const;

  /// Nodes made from here on record the first `count` modules of `stack` (the innermost as their scope).
  void set_scope(const std::vector<ModuleEntry>& stack, size_t count);

  struct Value {
    ir::Argument arg;   ///< the graph value (a state tensor's get_attr once read)
    std::string state;  ///< a parameter's, buffer's or constant's name
  };

  const Archive& archive_;
  const nlohmann::json& graph_;
  GraphBuilder b_;
  std::map<std::string, Value> values_;
  std::vector<std::vector<ModuleEntry>> stacks_;  // each node's nn_module_stack, in node order
  std::set<std::string> views_;                   // values that are views of others (slices, transposes, ...)
  std::map<std::string, int> last_use_;
  struct Reader {
    size_t node;        ///< its index; SIZE_MAX for the program's outputs
    std::string input;  ///< the input's schema name
  };
  std::map<std::string, std::vector<Reader>> readers_;  // each value's readers
  struct WrittenView {
    std::string base;  ///< the value written into
    ir::Argument::Items index;
  };
  std::map<std::string, WrittenView> written_views_;  // views read only by assignments into them
  std::string where_;
  int depth_ = 0;
};

}  // namespace qfx::io::pt2
