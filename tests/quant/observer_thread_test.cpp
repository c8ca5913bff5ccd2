// Observers on the interpreter's observer thread end up exactly as observers
// run in line: same histograms, ranges, outputs, warnings and errors, with
// in-place modules and ops after the observed nodes.

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

namespace qfx::quant {
namespace {

using Mode = ir::Interpreter::ObserverThread;

// conv -> observer -> ReLU(inplace=True) -> observer (the in-place module
// changes the tensor the first observer saw), and the input -> observer ->
// mul_(-1) -> observer (an in-place op on an observed tensor).
std::unique_ptr<ir::GraphModule> observed_model() {
  auto gm = std::make_unique<ir::GraphModule>(ir::make_container_module(), ir::parse_graph(R"(graph():
    %x : [num_users=2] = placeholder[target=x]
    %conv : [num_users=1] = call_module[target=conv](args = (%x,), kwargs = {})
    %obs_conv : [num_users=1] = call_module[target=obs_conv](args = (%conv,), kwargs = {})
    %relu : [num_users=1] = call_module[target=relu](args = (%obs_conv,), kwargs = {})
    %obs_relu : [num_users=1] = call_module[target=obs_relu](args = (%relu,), kwargs = {})
    %obs_x : [num_users=1] = call_module[target=obs_x](args = (%x,), kwargs = {})
    %neg : [num_users=1] = call_method[target=mul_](args = (%obs_x, -1), kwargs = {})
    %obs_neg : [num_users=1] = call_module[target=obs_neg](args = (%neg,), kwargs = {})
    %add : [num_users=1] = call_function[target=operator.add](args = (%obs_relu, %obs_neg), kwargs = {})
    return add)"));
  torch::manual_seed(0);
  gm->add_submodule("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 8, 3).padding(1)).ptr());
  gm->add_submodule("relu", torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)).ptr());
  for (const char* name : {"obs_conv", "obs_relu", "obs_neg"}) gm->add_submodule(name, HistogramObserver().ptr());
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

Observed run(Mode mode) {
  auto gm = observed_model();
  ir::Interpreter interpreter(*gm);
  interpreter.set_observer_thread(mode);
  Observed result;
  for (at::Tensor x : batches()) {
    result.outputs.push_back(interpreter.run({x}).toTensor());
    result.inputs_after.push_back(x);  // mul_ changed the caller's tensor
  }
  for (const char* name : {"obs_conv", "obs_relu", "obs_neg"}) {
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
  Observed threaded = run(Mode::kOn);
  expect_same(threaded.state, in_line.state, "observer state");
  expect_same(threaded.outputs, in_line.outputs, "output");
  expect_same(threaded.inputs_after, in_line.inputs_after, "input after mul_");
  // the in-place module and op did change what the observers after them saw
  EXPECT_GE(in_line.state[4].item<float>(), 0.0f) << "obs_relu's min";
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
