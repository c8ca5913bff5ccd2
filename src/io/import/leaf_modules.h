#pragma once
// Leaf modules: a `torch.nn` module of an imported model becomes the LibTorch
// (or qfx) module of the same kind. Parameters and buffers are copied from the
// file; hyper-parameters (stride, eps, ...) are read from the ATen ops of the
// leaf's own forward — traced files and exported programs keep no other trace
// of them. The TorchScript reader records those ops with a probe walk, the
// `.pt2` reader from the nodes in the leaf's scope.

#include "value.h"

#include "qfx/nn/attention.h"

#include <ATen/core/ivalue.h>
#include <torch/nn/module.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace qfx::io::detail {

/// One ATen op of a leaf's forward, with its inputs by their schema names
/// (constants where known, nullopt for computed values), as torch.fx's
/// normalize_function gives them: builders read `op.to_int("groups")` of
/// `aten::conv2d` and of `aten::_convolution` alike.
struct ProbedOp {
  std::string kind;                                ///< "aten::_convolution"
  std::vector<std::string> names;                  ///< the schema's argument names
  std::vector<c10::optional<c10::IValue>> inputs;  ///< inputs[i] is the argument names[i]

  /// True when the op's schema has an argument `name`.
  bool has(const std::string& name) const;
  /// The constant given for `name`; c10::Error naming the op when it is absent or computed.
  const c10::IValue& constant(const std::string& name) const;
  int64_t to_int(const std::string& name) const;
  double to_double(const std::string& name) const;
  bool to_bool(const std::string& name) const;
  std::vector<int64_t> ints(const std::string& name) const;
  /// True when `name` is given as None.
  bool is_none(const std::string& name) const;
};

/// What a builder knows about one leaf.
class Leaf {
 public:
  /// A parameter or buffer of the leaf by name; undefined when absent or None.
  using Tensors = std::function<at::Tensor(const std::string& name)>;
  /// An int attribute or class constant by name, when the file keeps it.
  using Ints = std::function<c10::optional<int64_t>(const std::string& name)>;

  Leaf(std::vector<ProbedOp> ops, Tensors tensors, Ints ints, bool training)
      : ops_(std::move(ops)), tensors_(std::move(tensors)), ints_(std::move(ints)), training_(training) {}

  /// The parameter or buffer `name`; undefined when absent or None.
  at::Tensor tensor(const std::string& name) const { return tensors_(name); }
  /// The first recorded op of one of `kinds`; raises c10::Error if none.
  const ProbedOp& op(const std::vector<std::string>& kinds) const;
  /// The first recorded op of one of `kinds`, or nullptr.
  const ProbedOp* find_op(const std::vector<std::string>& kinds) const;
  /// Every recorded op, in order.
  const std::vector<ProbedOp>& ops() const { return ops_; }
  /// An int attribute or class constant (scripted modules), or `fallback`.
  int64_t int_attribute(const std::string& name, int64_t fallback) const {
    return (ints_ ? ints_(name) : c10::nullopt).value_or(fallback);
  }
  bool is_training() const { return training_; }

 private:
  std::vector<ProbedOp> ops_;
  Tensors tensors_;
  Ints ints_;
  bool training_;
};

/// Builds the module for the TorchScript leaf at `path`, of Python class
/// `python_class` (`torch.nn.modules.conv.Conv2d`), from its forward
/// `method` (`forward`, or `forward__0` of a scripted overloaded forward);
/// nullptr for an unsupported class. Errors name the class and the path.
std::shared_ptr<torch::nn::Module> build_leaf_module(const torch::jit::Module& module, const std::string& python_class,
                                                     const std::string& path, const std::string& method = "forward");

/// Builds the module for `leaf` at `path`, of Python class `python_class`;
/// nullptr for an unsupported class. Errors name the class and the path.
std::shared_ptr<torch::nn::Module> build_leaf_module(const Leaf& leaf, const std::string& python_class,
                                                     const std::string& path);

/// True when the leaf table has a builder for `python_class`.
bool has_leaf_form(const std::string& python_class);

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

/// A scripted nn.MultiheadAttention as nn::MultiheadAttention (attention_leaf.cpp).
std::shared_ptr<torch::nn::Module> scripted_attention_leaf(const torch::jit::Module& module);

/// A scripted nn.TransformerEncoder or TransformerEncoderLayer (`python_class`)
/// as nn::TransformerEncoder(Layer), with its attributes and tensors; nullptr
/// for another class or an activation other than relu and gelu (transformer_leaf.cpp).
std::shared_ptr<torch::nn::Module> scripted_encoder_leaf(const torch::jit::Module& module,
                                                         const std::string& python_class);

/// An nn::MultiheadAttention (qfx/nn/attention.h) with the tensors `tensor`
/// gives by Python name (`in_proj_weight`, `out_proj.weight`, ...), in eval mode.
std::shared_ptr<torch::nn::Module> attention_leaf_of(const nn::MultiheadAttentionOptions& options,
                                                     const std::function<at::Tensor(const std::string&)>& tensor);

}  // namespace qfx::io::detail
