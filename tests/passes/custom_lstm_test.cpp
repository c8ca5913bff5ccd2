// The custom module LSTM in IR: DeQuantStubs after its outputs, their users
// observing nothing again, and the error for a result used as a whole (the
// oracle suite's static_lstm* cases check the numbers against PyTorch).

#include "qfx/backend/builtin_backends.h"
#include "qfx/ir/graph_module.h"
#include "qfx/ir/parser.h"
#include "qfx/nn/quantizable_lstm.h"
#include "qfx/quant/qconfig_mapping.h"
#include "qfx/quantize.h"
#include "support/fixtures.h"

#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/rnn.h>

namespace qfx {
namespace {

PrepareCustomConfig static_lstm_config() {
  PrepareCustomConfig config;
  config.float_to_observed_custom_module_classes["static"]["torch.nn.LSTM"] = "torch.ao.nn.quantizable.LSTM";
  return config;
}

std::unique_ptr<ir::GraphModule> lstm_model(const char* tail) {
  std::string text = std::string(R"(graph():
    %x : [num_users=1] = placeholder[target=x]
    %h : [num_users=1] = placeholder[target=h]
    %c : [num_users=1] = placeholder[target=c]
    %lstm : [num_users=2] = call_module[target=lstm](args = (%x, (%h, %c)), kwargs = {})
)") + tail;
  auto gm = std::make_unique<ir::GraphModule>(ir::make_container_module(), ir::parse_graph(text));
  gm->add_submodule("lstm", torch::nn::LSTM(4, 6).ptr());
  gm->add_submodule("linear", torch::nn::Linear(6, 3).ptr());
  return gm;
}

TEST(CustomModuleLSTM, PutsDeQuantStubsAfterItsOutputs) {
  auto gm = lstm_model(
      R"(    %getitem : [num_users=1] = call_function[target=operator.getitem](args = (%lstm, 0), kwargs = {})
    %getitem_1 : [num_users=1] = call_function[target=operator.getitem](args = (%lstm, 1), kwargs = {})
    %getitem_2 : [num_users=1] = call_function[target=operator.getitem](args = (%getitem_1, 1), kwargs = {})
    %linear : [num_users=1] = call_module[target=linear](args = (%getitem,), kwargs = {})
    return (linear, getitem_2))");
  prepare_fx(*gm, quant::get_default_qconfig_mapping("onednn"), backend::get_native_backend_config(),
             static_lstm_config());
  std::string code = gm->graph().to_string();
  // x, h and c observed; out and c_n behind a stub each; linear's input not observed again
  EXPECT_NE(code.find("call_module[target=lstm](args = (%activation_post_process_0, (%activation_post_process_1, "
                      "%activation_post_process_2))"),
            std::string::npos)
      << code;
  EXPECT_NE(code.find("%dequant_stub_0 : [num_users=1] = call_module[target=dequant_stub_0](args = (%getitem,)"),
            std::string::npos)
      << code;
  EXPECT_NE(code.find("call_module[target=linear](args = (%dequant_stub_0,)"), std::string::npos) << code;
  EXPECT_NE(code.find("call_module[target=dequant_stub_1](args = (%getitem_2,)"), std::string::npos) << code;
  EXPECT_NE(std::dynamic_pointer_cast<nn::QuantizableLSTMImpl>(gm->get_submodule("lstm")), nullptr);
}

TEST(CustomModuleLSTM, RefusesAResultUsedAsAWhole) {
  auto gm = lstm_model(
      R"(    %getitem : [num_users=1] = call_function[target=operator.getitem](args = (%lstm, 0), kwargs = {})
    return (getitem, lstm))");
  std::string error = test::error_of([&] {
    prepare_fx(*gm, quant::get_default_qconfig_mapping("onednn"), backend::get_native_backend_config(),
               static_lstm_config());
  });
  EXPECT_NE(error.find("%lstm: a statically quantized custom module LSTM returns quantized tensors, so its result "
                       "can only be indexed; %output uses it otherwise"),
            std::string::npos)
      << error;
}

TEST(CustomModuleLSTM, ConvertNamesTheMissingQuantizedClass) {
  auto gm = lstm_model(
      R"(    %getitem : [num_users=1] = call_function[target=operator.getitem](args = (%lstm, 0), kwargs = {})
    %getitem_1 : [num_users=0] = call_function[target=operator.getitem](args = (%lstm, 1), kwargs = {})
    return getitem)");
  prepare_fx(*gm, quant::get_default_qconfig_mapping("onednn"), backend::get_native_backend_config(),
             static_lstm_config());
  std::string error =
      test::error_of([&] { convert_fx(*gm, backend::get_native_backend_config(), static_lstm_config()); });
  EXPECT_NE(error.find("convert: %lstm is a torch.ao.nn.quantizable.LSTM and the ConvertCustomConfig maps it to no "
                       "quantized class"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace qfx
