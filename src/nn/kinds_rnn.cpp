// Module kinds: LSTM, GRU and RNN, LSTMCell, GRUCell and RNNCell (LibTorch
// modules), with Python's extra_repr (RNNBase's shows no nonlinearity) and
// forward: `lstm(x)` / `lstm(x, (h0, c0))` returns (output, (h_n, c_n));
// `gru(x)` / `gru(x, h0)` returns (output, h_n); `lstm_cell(x)` /
// `lstm_cell(x, (h, c))` returns (h', c'); the other cells return h'.

#include "module_kinds.h"

#include <torch/nn/modules/rnn.h>

#include <type_traits>

namespace qfx::nn {
namespace {

using detail::as;

// Python's RNNBase.extra_repr: only what differs from the defaults.
template <typename Impl>
std::string rnn_repr(const torch::nn::Module& m) {
  const auto& o = as<Impl>(m).options;
  std::string s = std::to_string(o.input_size()) + ", " + std::to_string(o.hidden_size());
  if (o.num_layers() != 1) s += ", num_layers=" + std::to_string(o.num_layers());
  if (!o.bias()) s += ", bias=False";
  if (o.batch_first()) s += ", batch_first=True";
  if (o.dropout() != 0) s += ", dropout=" + detail::py_float(o.dropout());
  if (o.bidirectional()) s += ", bidirectional=True";
  return s;
}

/// The optional second input: the initial state, None when not given.
const c10::IValue* initial_state(const torch::nn::Module& m, const std::vector<c10::IValue>& in) {
  TORCH_CHECK(!in.empty() && in.size() <= 2 && in[0].isTensor(), m.name(),
              " takes an input tensor and an optional initial state, got ", in.size(), " input(s)");
  return in.size() == 2 && !in[1].isNone() ? &in[1] : nullptr;
}

/// An LSTM's or LSTMCell's optional `(h, c)` as LibTorch's forward takes it.
c10::optional<std::tuple<at::Tensor, at::Tensor>> lstm_initial_state(const torch::nn::Module& m,
                                                                     const std::vector<c10::IValue>& in) {
  const c10::IValue* hx = initial_state(m, in);
  if (hx == nullptr) return c10::nullopt;
  auto [h, c] = detail::lstm_state(*hx);
  return std::make_tuple(h, c);
}

c10::IValue lstm_forward(torch::nn::Module& m, std::vector<c10::IValue>& in) {
  auto state = lstm_initial_state(m, in);
  auto [output, hc] = dynamic_cast<torch::nn::LSTMImpl&>(m).forward(in[0].toTensor(), state);
  return c10::ivalue::Tuple::create(output, c10::ivalue::Tuple::create(std::get<0>(hc), std::get<1>(hc)));
}

template <typename Impl>
c10::IValue single_state_forward(torch::nn::Module& m, std::vector<c10::IValue>& in) {
  const c10::IValue* hx = initial_state(m, in);
  auto [output, h] = dynamic_cast<Impl&>(m).forward(in[0].toTensor(), hx ? hx->toTensor() : at::Tensor());
  return c10::ivalue::Tuple::create(output, h);
}

// Python's RNNCellBase.extra_repr.
template <typename Impl>
std::string cell_repr(const torch::nn::Module& m) {
  const auto& o = as<Impl>(m).options_base;
  std::string s = std::to_string(o.input_size()) + ", " + std::to_string(o.hidden_size());
  if (!o.bias()) s += ", bias=False";
  if constexpr (std::is_same_v<Impl, torch::nn::RNNCellImpl>) {
    if (c10::get_if<torch::enumtype::kReLU>(&as<Impl>(m).options.nonlinearity())) s += ", nonlinearity='relu'";
  }
  return s;
}

c10::IValue lstm_cell_forward(torch::nn::Module& m, std::vector<c10::IValue>& in) {
  auto state = lstm_initial_state(m, in);
  auto [h, c] = dynamic_cast<torch::nn::LSTMCellImpl&>(m).forward(in[0].toTensor(), state);
  return c10::ivalue::Tuple::create(h, c);
}

template <typename Impl>
c10::IValue cell_forward(torch::nn::Module& m, std::vector<c10::IValue>& in) {
  const c10::IValue* hx = initial_state(m, in);
  return dynamic_cast<Impl&>(m).forward(in[0].toTensor(), hx ? hx->toTensor() : at::Tensor());
}

}  // namespace

void register_rnn_kinds() {
  detail::add_kind<torch::nn::LSTMImpl>("torch.nn.LSTM", rnn_repr<torch::nn::LSTMImpl>, lstm_forward);
  detail::add_kind<torch::nn::GRUImpl>("torch.nn.GRU", rnn_repr<torch::nn::GRUImpl>,
                                       single_state_forward<torch::nn::GRUImpl>);
  detail::add_kind<torch::nn::RNNImpl>("torch.nn.RNN", rnn_repr<torch::nn::RNNImpl>,
                                       single_state_forward<torch::nn::RNNImpl>);
  detail::add_kind<torch::nn::LSTMCellImpl>("torch.nn.LSTMCell", cell_repr<torch::nn::LSTMCellImpl>, lstm_cell_forward);
  detail::add_kind<torch::nn::GRUCellImpl>("torch.nn.GRUCell", cell_repr<torch::nn::GRUCellImpl>,
                                           cell_forward<torch::nn::GRUCellImpl>);
  detail::add_kind<torch::nn::RNNCellImpl>("torch.nn.RNNCell", cell_repr<torch::nn::RNNCellImpl>,
                                           cell_forward<torch::nn::RNNCellImpl>);
}

}  // namespace qfx::nn
