#pragma once
// Leaf modules: a `torch.nn` module in a TorchScript file becomes the LibTorch
// (or qfx) module of the same kind. Parameters and buffers are copied from the
// file; hyper-parameters (stride, eps, ...) are read from the ATen ops of the
// leaf's own forward(), which a probe walk records — traced files keep no
// other trace of them.

#include "value.h"

#include <torch/nn/module.h>

#include <memory>
#include <string>
#include <vector>

namespace qfx::io::detail {

/// One ATen op of a leaf's forward, with its inputs (constants where known).
struct ProbedOp {
  std::string kind;  ///< "aten::_convolution"
  std::vector<ImportValue> inputs;

  const c10::IValue& constant(size_t index) const;
  int64_t to_int(size_t index) const;
  double to_double(size_t index) const;
  bool to_bool(size_t index) const;
  std::vector<int64_t> ints(size_t index) const;
  bool is_none(size_t index) const;
};

/// What a builder knows about one leaf.
class Leaf {
 public:
  Leaf(const torch::jit::Module& module, std::vector<ProbedOp> ops) : module_(module), ops_(std::move(ops)) {}

  /// The parameter or buffer `name`; undefined when absent or None.
  at::Tensor tensor(const std::string& name) const;
  /// The first recorded op of one of `kinds`; raises c10::Error if none.
  const ProbedOp& op(const std::vector<std::string>& kinds) const;
  /// The first recorded op of one of `kinds`, or nullptr.
  const ProbedOp* find_op(const std::vector<std::string>& kinds) const;
  /// Every recorded op, in order.
  const std::vector<ProbedOp>& ops() const { return ops_; }
  /// An int attribute or class constant (scripted modules), or `fallback`.
  int64_t int_attribute(const std::string& name, int64_t fallback) const;
  bool is_training() const { return module_.is_training(); }

 private:
  const torch::jit::Module& module_;
  std::vector<ProbedOp> ops_;
};

/// Builds the module for the TorchScript leaf at `path`, of Python class
/// `python_class` (`torch.nn.modules.conv.Conv2d`), from its forward
/// `method` (`forward`, or `forward__0` of a scripted overloaded forward);
/// nullptr for an unsupported class. Errors name the class and the path.
std::shared_ptr<torch::nn::Module> build_leaf_module(const torch::jit::Module& module, const std::string& python_class,
                                                     const std::string& path, const std::string& method = "forward");

/// Builders of the leaf table (leaf_builders_*.cpp).
using LeafBuilder = std::shared_ptr<torch::nn::Module> (*)(const Leaf&);
struct LeafRow {
  const char* python_class;
  LeafBuilder build;
};
const std::vector<LeafRow>& weighted_leaf_rows();
const std::vector<LeafRow>& simple_leaf_rows();
const std::vector<LeafRow>& rnn_leaf_rows();

/// Copies `source` into the parameter or buffer `target` (keeping its
/// identity inside the module).
void assign(at::Tensor& target, const at::Tensor& source);

}  // namespace qfx::io::detail
