#pragma once
/// \file
/// GraphModule: a Graph together with the module tree and attributes its
/// nodes refer to, as `torch.fx.GraphModule`. `call_module` targets are dotted
/// paths into the tree of `torch::nn::Module`s; `get_attr` targets are dotted
/// paths to parameters, buffers, or other attributes (e.g. packed weights).

#include "qfx/ir/graph.h"

#include <ATen/core/ivalue.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace torch::nn {
class Module;
}

namespace qfx::ir {

/// A module tree plus the graph of its forward().
///
/// Example:
/// \code
///   GraphModule gm;
///   gm.add_submodule("features.0", torch::nn::Conv2d(3, 8, 3).ptr());
///   Node* x = gm.graph().placeholder("x");
///   gm.graph().output(gm.graph().call_module("features.0", {x}));
///   gm.lint();
///   std::cout << gm.code();
/// \endcode
class GraphModule {
 public:
  /// An empty root module and an empty graph.
  GraphModule();
  GraphModule(std::shared_ptr<torch::nn::Module> root, std::unique_ptr<Graph> graph);
  ~GraphModule();
  GraphModule(const GraphModule&) = delete;
  GraphModule& operator=(const GraphModule&) = delete;

  /// A deep copy, as Python's `copy.deepcopy(gm)`: the graph, every module
  /// (through its clone()) and attribute copied; a module or tensor that
  /// is reached at two places stays one in the copy. c10::Error naming the
  /// module's path when a module cannot be copied.
  std::unique_ptr<GraphModule> deep_copy() const;

  Graph& graph() { return *graph_; }
  const Graph& graph() const { return *graph_; }
  /// Replaces the graph (the module tree stays).
  void set_graph(std::unique_ptr<Graph> graph);

  torch::nn::Module& root() const { return *root_; }
  std::shared_ptr<torch::nn::Module> root_ptr() const { return root_; }

  /// The submodule at a dotted path ("" is the root); raises c10::Error
  /// naming the missing part when there is none.
  std::shared_ptr<torch::nn::Module> get_submodule(const std::string& path) const;
  /// The submodule at a dotted path, or nullptr.
  std::shared_ptr<torch::nn::Module> find_submodule(const std::string& path) const;
  /// Installs `module` at a dotted path, creating empty parents as FX does;
  /// replaces a module already there.
  void add_submodule(const std::string& path, std::shared_ptr<torch::nn::Module> module);
  /// Removes the submodule at `path`; returns false if there was none.
  bool delete_submodule(const std::string& path);

  /// The attribute at a dotted path: a parameter, a buffer, or a value set by
  /// set_attr. Raises c10::Error if there is none.
  c10::IValue get_attr(const std::string& path) const;
  bool has_attr(const std::string& path) const;
  /// Sets an attribute: tensors become buffers of the owning module (created
  /// as needed), other values (packed weights, ...) are kept by path.
  void set_attr(const std::string& path, c10::IValue value);

  /// Values kept by name outside the module tree, untouched by
  /// rebuild_module_tree and exported with the model (PyTorch's
  /// `preserved_attributes`).
  const std::map<std::string, c10::IValue>& preserved_attributes() const { return preserved_; }
  std::map<std::string, c10::IValue>& preserved_attributes() { return preserved_; }

  /// FX's generated Python source of forward().
  std::string code() const { return graph_->python_code("self"); }
  /// `print(gm)` as PyTorch shows it: the module tree, then the code.
  std::string to_string() const;

  /// The name the root prints under: "GraphModule", or as FX's
  /// symbolic_trace names it, the traced model's class (`ResNet`).
  const std::string& class_name() const { return class_name_; }
  void set_class_name(std::string name) { class_name_ = std::move(name); }

  /// Graph::lint plus: every call_module and get_attr target exists.
  void lint() const;

  /// Rebuilds the module tree from the graph, as Python's
  /// `GraphModule(root, graph)` does after a pass: only the submodules and
  /// attributes the graph refers to are kept, in the order of first use,
  /// under fresh `Module()` parents. Modules and tensors are shared, not copied;
  /// the old tree (with what the new one left out) is retired.
  void rebuild_module_tree();

  /// Keeps `module`, which a pass replaced or dropped, until take_retired():
  /// the PassManager lets go of retired modules beside the next pass
  /// (freeing weights is a large part of convert's time).
  void retire(std::shared_ptr<torch::nn::Module> module) { retired_.push_back(std::move(module)); }
  /// The retired modules, handed over.
  std::vector<std::shared_ptr<torch::nn::Module>> take_retired() { return std::move(retired_); }

 private:
  std::shared_ptr<torch::nn::Module> root_;
  std::unique_ptr<Graph> graph_;
  std::map<std::string, c10::IValue> attributes_;
  std::map<std::string, c10::IValue> preserved_;
  std::string class_name_ = "GraphModule";
  std::vector<std::shared_ptr<torch::nn::Module>> retired_;
};

/// A module with no behaviour of its own: the root of a GraphModule and the
/// parents that add_submodule creates. Clones deeply.
std::shared_ptr<torch::nn::Module> make_container_module();

}  // namespace qfx::ir
