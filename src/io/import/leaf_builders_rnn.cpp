// Leaf builders for the recurrent modules: LSTM, GRU, RNN (tanh or relu)
// and their cells. Sizes come from the weights; a layer's other
// hyper-parameters from the leaf's aten::lstm / gru / rnn_tanh / rnn_relu op
// (the `.input` overload, whose arguments are input, hx, params, has_biases,
// num_layers, dropout, train, bidirectional, batch_first); a cell's bias from
// its parameters.

#include "leaf_modules.h"

#include <torch/nn/modules/rnn.h>

#include <algorithm>
#include <type_traits>

namespace qfx::io::detail {
namespace {

using ModulePtr = std::shared_ptr<torch::nn::Module>;

/// The leaf's recurrent op over a padded input (a scripted forward holds the
/// PackedSequence overload too, which has no batch_first).
const ProbedOp& rnn_op(const Leaf& leaf, const std::vector<std::string>& kinds) {
  for (const ProbedOp& op : leaf.ops()) {
    bool wanted = std::find(kinds.begin(), kinds.end(), op.kind) != kinds.end();
    if (wanted && op.has("batch_first")) return op;
  }
  return leaf.op(kinds);  // the error names the ops looked for
}

template <typename Options>
void read_hyper_parameters(const ProbedOp& op, Options& o) {
  o.bias(op.to_bool("has_biases")).num_layers(op.to_int("num_layers")).dropout(op.to_double("dropout"));
  o.bidirectional(op.to_bool("bidirectional")).batch_first(op.to_bool("batch_first"));
}

/// Copies every weight and bias of the leaf (weight_ih_l0, bias_hh_l1_reverse, ...).
void copy_parameters(const Leaf& leaf, torch::nn::Module& m) {
  TORCH_CHECK(!leaf.tensor("weight_hr_l0").defined(), "LSTM with proj_size is not supported");
  for (auto& item : m.named_parameters(/*recurse=*/false)) {
    at::Tensor value = leaf.tensor(item.key());
    TORCH_CHECK(value.defined(), "its parameter ", item.key(), " is missing");
    assign(item.value(), value);
  }
}

template <typename Impl, typename Options>
ModulePtr recurrent(const Leaf& leaf, const ProbedOp& op, int64_t gates) {
  at::Tensor w = leaf.tensor("weight_ih_l0");
  TORCH_CHECK(w.defined(), "its parameter weight_ih_l0 is missing");
  Options o(w.size(1), w.size(0) / gates);
  read_hyper_parameters(op, o);
  auto m = std::make_shared<Impl>(o);
  copy_parameters(leaf, *m);
  return m;
}

ModulePtr lstm(const Leaf& leaf) {
  return recurrent<torch::nn::LSTMImpl, torch::nn::LSTMOptions>(leaf, rnn_op(leaf, {"aten::lstm"}), 4);
}

ModulePtr gru(const Leaf& leaf) {
  return recurrent<torch::nn::GRUImpl, torch::nn::GRUOptions>(leaf, rnn_op(leaf, {"aten::gru"}), 3);
}

ModulePtr rnn(const Leaf& leaf) {
  const ProbedOp& op = rnn_op(leaf, {"aten::rnn_tanh", "aten::rnn_relu"});
  at::Tensor w = leaf.tensor("weight_ih_l0");
  TORCH_CHECK(w.defined(), "its parameter weight_ih_l0 is missing");
  torch::nn::RNNOptions o(w.size(1), w.size(0));
  read_hyper_parameters(op, o);
  if (op.kind == "aten::rnn_relu") o.nonlinearity(torch::kReLU);
  auto m = std::make_shared<torch::nn::RNNImpl>(o);
  copy_parameters(leaf, *m);
  return m;
}

/// A trace runs a cell's ATen op decomposed (linear, chunk, sigmoid, ...); a
/// scripted forward calls it (aten::rnn_relu_cell). Either way an RNNCell
/// with nonlinearity='relu' is the one that applies relu.
bool applies_relu(const Leaf& leaf) {
  for (const ProbedOp& op : leaf.ops()) {
    if (op.kind == "aten::rnn_relu_cell" || op.kind == "aten::relu" || op.kind == "aten::relu_") return true;
  }
  return false;
}

template <typename Impl, typename Options, int64_t gates>
ModulePtr cell(const Leaf& leaf) {
  at::Tensor w = leaf.tensor("weight_ih");
  TORCH_CHECK(w.defined(), "its parameter weight_ih is missing");
  Options o(w.size(1), w.size(0) / gates);
  o.bias(leaf.tensor("bias_ih").defined());
  if constexpr (std::is_same_v<Impl, torch::nn::RNNCellImpl>) {
    if (applies_relu(leaf)) o.nonlinearity(torch::kReLU);
  }
  auto m = std::make_shared<Impl>(o);
  copy_parameters(leaf, *m);
  return m;
}

}  // namespace

const std::vector<LeafRow>& rnn_leaf_rows() {
  static const std::vector<LeafRow> kRows = {
      {"torch.nn.modules.rnn.LSTM", lstm},
      {"torch.nn.modules.rnn.GRU", gru},
      {"torch.nn.modules.rnn.RNN", rnn},
      {"torch.nn.modules.rnn.LSTMCell", cell<torch::nn::LSTMCellImpl, torch::nn::LSTMCellOptions, 4>},
      {"torch.nn.modules.rnn.GRUCell", cell<torch::nn::GRUCellImpl, torch::nn::GRUCellOptions, 3>},
      {"torch.nn.modules.rnn.RNNCell", cell<torch::nn::RNNCellImpl, torch::nn::RNNCellOptions, 1>},
  };
  return kRows;
}

}  // namespace qfx::io::detail
