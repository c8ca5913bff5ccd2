// Observers on the interpreter's observer thread end up exactly as observers
// run in line: same histograms, ranges, outputs, warnings and errors, with
// in-place modules and ops after the observed nodes.

#include "../../src/util/worker_thread.h"
#include "qfx/ir/graph_module.h"
#include "qfx/ir/interpreter.h"
#include "qfx/ir/parser.h"
#include "qfx/quant/histogram_observer.h"
#include "qfx/quant/min_max_observers.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>

#include <future>
#include <memory>

namespace qfx::quant {
namespace {

using Mode = ir::Interpreter::ObserverThread;

// conv -> observer -> ReLU(inplace=True) -> observer (the in-place module
// would change the tensor the first observer saw; it runs into a new tensor),
// conv2 -> observer -> Dropout(inplace=True), training (changes its input in
// place: the observer before it gets a copy), and the input -> observer ->
// mul_(-1) -> observer (an in-place op on an observed tensor).
const char* const kHistogramObservers[] = {"obs_conv", "obs_relu", "obs_neg", "obs_conv2", "obs_drop"};

std::unique_ptr<ir::GraphModule> observed_model() {
  auto gm = std::make_unique<ir::GraphModule>(ir::make_container_module(), ir::parse_graph(R"(graph():
    %x : [num_users=3] = placeholder[target=x]
    %conv : [num_users=1] = call_module[target=conv](args = (%x,), kwargs = {})
    %obs_conv : [num_users=1] = call_module[target=obs_conv](args = (%conv,), kwargs = {})
    %relu : [num_users=1] = call_module[target=relu](args = (%obs_conv,), kwargs = {})
    %obs_relu : [num_users=1] = call_module[target=obs_relu](args = (%relu,), kwargs = {})
    %obs_x : [num_users=1] = call_module[target=obs_x](args = (%x,), kwargs = {})
    %neg : [num_users=1] = call_method[target=mul_](args = (%obs_x, -1), kwargs = {})
    %obs_neg : [num_users=1] = call_module[target=obs_neg](args = (%neg,), kwargs = {})
    %add : [num_users=1] = call_function[target=operator.add](args = (%obs_relu, %obs_neg), kwargs = {})
    %conv2 : [num_users=1] = call_module[target=conv2](args = (%x,), kwargs = {})
    %obs_conv2 : [num_users=1] = call_module[target=obs_conv2](args = (%conv2,), kwargs = {})
    %drop : [num_users=1] = call_module[target=drop](args = (%obs_conv2,), kwargs = {})
    %obs_drop : [num_users=1] = call_module[target=obs_drop](args = (%drop,), kwargs = {})
    %out : [num_users=1] = call_function[target=operator.add](args = (%add, %obs_drop), kwargs = {})
    return out)"));
  torch::manual_seed(0);
  gm->add_submodule("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 8, 3).padding(1)).ptr());
  gm->add_submodule("relu", torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)).ptr());
  gm->add_submodule("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 8, 1)).ptr());
  gm->add_submodule("drop", torch::nn::Dropout(torch::nn::DropoutOptions(0.5).inplace(true)).ptr());
  for (const char* name : kHistogramObservers) gm->add_submodule(name, HistogramObserver().ptr());
  gm->add_submodule("obs_x", MinMaxObserver().ptr());
  return gm;
}

// Large enough that an observer is still binning when the next nodes run.
std::vector<at::Tensor> batches() {
  at::manual_seed(1);
  std::vector<at::Tensor> out;
  for (int i = 0; i < 4; ++i) out.push_back(at::randn({2, 8, 128, 128}) * (1 + i));
  return out;
}

struct Observed {
  std::vector<at::Tensor> outputs, inputs_after, state;
};

// Holds the observer thread from each conv's hook until the in-place module
// after it has run, so that the conv's observer runs only then (without the
// hold it may well be done before).
ir::Interpreter::NodeHook hold_observers_past_inplace_modules() {
  auto held = std::make_shared<std::promise<void>>();
  return [held](const ir::Node& node, const c10::IValue&) mutable {
    if (node.name() == "conv" || node.name() == "conv2") {
      held = std::make_shared<std::promise<void>>();
      util::WorkerThread::instance().submit([released = held->get_future().share()] { released.wait(); }, 0, "");
    }
    if (node.name() == "relu" || node.name() == "drop") held->set_value();
  };
}

Observed run(Mode mode, bool hold = false) {
  auto gm = observed_model();
  ir::Interpreter interpreter(*gm);
  interpreter.set_observer_thread(mode);
  if (hold) interpreter.set_node_hook(hold_observers_past_inplace_modules());
  Observed result;
  for (at::Tensor x : batches()) {
    result.outputs.push_back(interpreter.run({x}).toTensor());
    result.inputs_after.push_back(x);  // mul_ changed the caller's tensor
  }
  for (const char* name : kHistogramObservers) {
    auto obs = std::dynamic_pointer_cast<HistogramObserverImpl>(gm->get_submodule(name));
    result.state.insert(result.state.end(), {obs->histogram.clone(), obs->min_val.clone(), obs->max_val.clone()});
  }
  auto obs_x = std::dynamic_pointer_cast<MinMaxObserverImpl>(gm->get_submodule("obs_x"));
  result.state.insert(result.state.end(), {obs_x->min_val.clone(), obs_x->max_val.clone()});
  return result;
}

void expect_same(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::equal(a[i], b[i])) << what << " " << i;
}

TEST(ObserverThread, ObserversEndAsInLine) {
  Observed in_line = run(Mode::kOff);
  for (bool hold : {false, true}) {
    Observed threaded = run(Mode::kOn, hold);
    expect_same(threaded.state, in_line.state, hold ? "observer state (held)" : "observer state");
    expect_same(threaded.outputs, in_line.outputs, "output");
    expect_same(threaded.inputs_after, in_line.inputs_after, "input after mul_");
  }
  // the in-place module and op did change what the observers after them saw
  EXPECT_GE(in_line.state[4].item<float>(), 0.0f) << "obs_relu's min";
}

// The ReLU(inplace=True) after an observed conv runs into a new tensor: the
// conv's output stays as the observer saw it, with the ReLU's values.
TEST(ObserverThread, InPlaceActivationAfterAnObservedConvKeepsItsInput) {
  for (Mode mode : {Mode::kOn, Mode::kOff}) {
    auto gm = observed_model();
    ir::Interpreter interpreter(*gm);
    interpreter.set_observer_thread(mode);
    at::Tensor conv_out, relu_out;
    interpreter.set_node_hook([&](const ir::Node& node, const c10::IValue& value) {
      if (node.name() == "conv") conv_out = value.toTensor();
      if (node.name() == "relu") relu_out = value.toTensor();
    });
    interpreter.run({batches()[0]});
    ASSERT_TRUE(conv_out.defined() && relu_out.defined());
    EXPECT_FALSE(relu_out.is_same(conv_out));
    EXPECT_LT(conv_out.min().item<float>(), 0.0f) << "the conv's output was clamped";
    EXPECT_TRUE(at::equal(relu_out, at::relu(conv_out)));
  }
}

class Collect : public c10::WarningHandler {
 public:
  void process(const c10::SourceLocation&, const std::string& message, const bool) override {
    messages.push_back(message);
  }
  std::vector<std::string> messages;
};

std::vector<std::string> warnings_of_nan(Mode mode) {
  auto gm = observed_model();
  ir::Interpreter interpreter(*gm);
  interpreter.set_observer_thread(mode);
  Collect collect;
  c10::Warning::WarningHandlerGuard guard(&collect);
  at::Tensor x = batches()[0];
  x[0][0][0][0] = NAN;
  interpreter.run({x});
  return collect.messages;
}

TEST(ObserverThread, WarningsReachTheCallersHandler) {
  std::vector<std::string> in_line = warnings_of_nan(Mode::kOff);
  ASSERT_FALSE(in_line.empty());
  EXPECT_EQ(warnings_of_nan(Mode::kOn), in_line);
}

std::string error_of_bad_axis(Mode mode) {
  auto gm = observed_model();
  gm->add_submodule("obs_conv", PerChannelMinMaxObserver(PerChannelMinMaxObserverOptions().ch_axis(7)).ptr());
  ir::Interpreter interpreter(*gm);
  interpreter.set_observer_thread(mode);
  try {
    interpreter.run({batches()[0]});
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "no error";
}

TEST(ObserverThread, ErrorsNameTheObserverNode) {
  std::string in_line = error_of_bad_axis(Mode::kOff);
  EXPECT_NE(in_line.find("While executing %obs_conv"), std::string::npos) << in_line;
  EXPECT_EQ(error_of_bad_axis(Mode::kOn), in_line);
}

}  // namespace
}  // namespace qfx::quant
