// Interpreter: modules, functions and methods run on ATen, with Python's
// semantics for numbers; errors name the node.

#include "qfx/ir/graph_module.h"
#include "qfx/ir/interpreter.h"
#include "qfx/ir/parser.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

namespace qfx::ir {
namespace {

std::unique_ptr<GraphModule> conv_model() {
  auto gm = std::make_unique<GraphModule>(make_container_module(), parse_graph(R"(graph():
    %x : [num_users=1] = placeholder[target=x]
    %conv : [num_users=2] = call_module[target=features.conv](args = (%x,), kwargs = {})
    %size : [num_users=1] = call_method[target=size](args = (%conv, 0), kwargs = {})
    %view : [num_users=1] = call_method[target=view](args = (%conv, %size, -1), kwargs = {})
    %relu : [num_users=1] = call_function[target=torch.nn.functional.relu](args = (%view,), kwargs = {inplace: False})
    %bias : [num_users=1] = get_attr[target=bias]
    %add : [num_users=2] = call_function[target=operator.add](args = (%relu, %bias), kwargs = {})
    %shape : [num_users=1] = call_function[target=getattr](args = (%add, 'shape'), kwargs = {})
    %getitem : [num_users=1] = call_function[target=operator.getitem](args = (%shape, -1), kwargs = {})
    return (add, getitem))"));
  gm->add_submodule("features.conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 4, 3)).ptr());
  gm->set_attr("bias", at::arange(144, at::kFloat));
  return gm;
}

TEST(Interpreter, RunsModulesFunctionsAndMethods) {
  auto gm = conv_model();
  gm->lint();
  at::manual_seed(0);
  at::Tensor x = at::randn({2, 3, 8, 8});
  Interpreter interpreter(*gm);
  c10::IValue out = interpreter.run({x});
  auto conv = std::dynamic_pointer_cast<torch::nn::Conv2dImpl>(gm->get_submodule("features.conv"));
  at::Tensor expected = at::relu(conv->forward(x).view({2, -1})) + at::arange(144, at::kFloat);
  const auto& items = out.toTupleRef().elements();
  EXPECT_TRUE(at::equal(items[0].toTensor(), expected));
  EXPECT_EQ(items[1].toInt(), 144);
  // A second run reuses the compiled program.
  EXPECT_TRUE(at::equal(interpreter.run({x}).toTupleRef().elements()[0].toTensor(), expected));
}

TEST(Interpreter, ErrorsNameTheNode) {
  auto gm = conv_model();
  Interpreter interpreter(*gm);
  try {
    interpreter.run({at::randn({2, 5, 8, 8})});
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    std::string message = e.what_without_backtrace();
    EXPECT_EQ(message.rfind("While executing %conv : [num_users=2] = call_module[target=features.conv]", 0), 0u)
        << message;
    EXPECT_NE(message.find("channels"), std::string::npos) << message;
  }
  try {
    interpreter.run({});
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("forward() takes 1 input(s), got 0"), std::string::npos) << e.what();
  }
}

TEST(Interpreter, UnknownTargetsFailAtCompileTime) {
  GraphModule gm(make_container_module(), parse_graph(R"(graph():
    %x : [num_users=1] = placeholder[target=x]
    %f : [num_users=1] = call_function[target=torch.no_such_op](args = (%x,), kwargs = {})
    return f)"));
  try {
    Interpreter interpreter(gm);
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no implementation of function torch.no_such_op"), std::string::npos);
  }
}

TEST(Interpreter, PythonNumberSemantics) {
  GraphModule gm(make_container_module(), parse_graph(R"(graph():
    %x : [num_users=2] = placeholder[target=x]
    %n : [num_users=0] = placeholder[target=n](default=7)
    %fd : [num_users=1] = call_function[target=operator.floordiv](args = (-7, 2), kwargs = {})
    %td : [num_users=0] = call_function[target=operator.truediv](args = (7, 2), kwargs = {})
    %rsub : [num_users=1] = call_function[target=operator.sub](args = (1.0, %x), kwargs = {})
    %rdiv : [num_users=1] = call_function[target=operator.truediv](args = (2.0, %x), kwargs = {})
    return (fd, rsub, rdiv))"));
  at::Tensor x = at::tensor({1.0f, 4.0f});
  Interpreter interpreter(gm);
  auto out = interpreter.run({x}).toTupleRef().elements();
  EXPECT_EQ(out[0].toInt(), -4);  // Python floors
  EXPECT_TRUE(at::equal(out[1].toTensor(), at::tensor({0.0f, -3.0f})));
  EXPECT_TRUE(at::equal(out[2].toTensor(), at::reciprocal(x) * 2.0));  // torch.Tensor.__rtruediv__
}

TEST(Interpreter, PythonModuloAndPower) {
  // Python's % takes the divisor's sign; int ** int is an int unless the exponent is negative
  GraphModule gm(make_container_module(), parse_graph(R"(graph():
    %x : [num_users=2] = placeholder[target=x]
    %m1 : [num_users=1] = call_function[target=operator.mod](args = (-7, 3), kwargs = {})
    %m2 : [num_users=1] = call_function[target=operator.mod](args = (7, -3), kwargs = {})
    %m3 : [num_users=1] = call_function[target=operator.mod](args = (-7.5, 2), kwargs = {})
    %p1 : [num_users=1] = call_function[target=operator.pow](args = (3, 4), kwargs = {})
    %p2 : [num_users=1] = call_function[target=operator.pow](args = (2, -1), kwargs = {})
    %tm : [num_users=1] = call_function[target=operator.mod](args = (%x, 3), kwargs = {})
    %tp : [num_users=1] = call_function[target=operator.pow](args = (2, %x), kwargs = {})
    return (m1, m2, m3, p1, p2, tm, tp))"));
  at::Tensor x = at::tensor({-4.0f, 5.0f});
  auto out = Interpreter(gm).run({x}).toTupleRef().elements();
  EXPECT_EQ(out[0].toInt(), 2);
  EXPECT_EQ(out[1].toInt(), -2);
  EXPECT_EQ(out[2].toDouble(), 0.5);
  EXPECT_TRUE(out[3].isInt());
  EXPECT_EQ(out[3].toInt(), 81);
  EXPECT_EQ(out[4].toDouble(), 0.5);
  EXPECT_TRUE(at::equal(out[5].toTensor(), at::tensor({2.0f, 2.0f})));  // torch.remainder: the divisor's sign
  EXPECT_TRUE(at::equal(out[6].toTensor(), at::tensor({0.0625f, 32.0f})));
}

TEST(Interpreter, SetitemWritesInPlaceAndGivesTheTensor) {
  GraphModule gm(make_container_module(), parse_graph(R"(graph():
    %x : [num_users=1] = placeholder[target=x]
    %zeros : [num_users=1] = call_method[target=new_zeros](args = (%x, [3, 4]), kwargs = {})
    %setitem : [num_users=1] = call_function[target=operator.setitem](args = (%zeros, (slice(0, -1, None), slice(2, None, None)), 1.5), kwargs = {})
    %setitem_1 : [num_users=1] = call_function[target=operator.setitem](args = (%setitem, 2, %x), kwargs = {})
    return setitem_1)"));
  at::Tensor x = at::tensor({1.0f, 2.0f, 3.0f, 4.0f});
  at::Tensor expected = at::zeros({3, 4});
  expected.index_put_({at::indexing::Slice(0, -1), at::indexing::Slice(2, at::indexing::None)}, 1.5);
  expected[2] = x;
  EXPECT_TRUE(at::equal(Interpreter(gm).run({x}).toTensor(), expected));
}

TEST(Interpreter, HookSeesEveryNodeInOrder) {
  auto gm = conv_model();
  Interpreter interpreter(*gm);
  std::vector<std::string> seen;
  interpreter.set_node_hook([&](const Node& node, const c10::IValue&) { seen.push_back(node.name()); });
  interpreter.run({at::randn({1, 3, 8, 8})});
  EXPECT_EQ(seen, (std::vector<std::string>{"x", "conv", "size", "view", "relu", "bias", "add", "shape", "getitem",
                                            "output"}));
}

TEST(Interpreter, FreesValuesAfterTheirLastUse) {
  auto gm = conv_model();
  Interpreter interpreter(*gm);
  // `relu` is last used by `add`: a weak reference shows that it is freed then.
  c10::optional<c10::weak_intrusive_ptr<c10::TensorImpl>> relu;
  bool alive_before_add = false;
  bool alive_after_add = true;
  interpreter.set_node_hook([&](const Node& node, const c10::IValue& value) {
    if (node.name() == "relu") relu.emplace(value.toTensor().getIntrusivePtr());
    if (node.name() == "bias") alive_before_add = !relu->expired();
    if (node.name() == "shape") alive_after_add = !relu->expired();
  });
  interpreter.run({at::randn({1, 3, 8, 8})});
  EXPECT_TRUE(alive_before_add);
  EXPECT_FALSE(alive_after_add);
}

TEST(Interpreter, ResumesFromRecordedValues) {
  auto gm = conv_model();
  Interpreter interpreter(*gm);
  at::Tensor x = at::randn({2, 3, 8, 8});
  std::vector<c10::IValue> values;
  std::vector<bool> keep(10, true);
  keep[2] = false;  // `size`
  c10::IValue full = interpreter.run_recording({x}, keep, values);
  ASSERT_EQ(values.size(), 10u);  // every node, the output last
  EXPECT_TRUE(at::equal(values[0].toTensor(), x));
  EXPECT_TRUE(values[2].isNone());
  EXPECT_EQ(values[8].toInt(), 144);
  // from `relu` on, the view's value comes from the recording (made 10x larger, it shows that it is used)
  std::vector<c10::IValue> changed = values;
  changed[3] = values[3].toTensor() * 10;
  c10::IValue resumed = interpreter.run_from(4, changed);
  at::Tensor expected = at::relu(values[3].toTensor() * 10) + at::arange(144, at::kFloat);
  EXPECT_TRUE(at::equal(resumed.toTupleRef().elements()[0].toTensor(), expected));
  EXPECT_TRUE(at::equal(interpreter.run_from(4, values).toTupleRef().elements()[0].toTensor(),
                        full.toTupleRef().elements()[0].toTensor()));
  EXPECT_THROW(interpreter.run_from(0, values), c10::Error);  // the placeholder is not before position 0
  EXPECT_FALSE(interpreter.changes_in_place_from(0));
}

TEST(Interpreter, ReportsWhereValuesMayChangeInPlace) {
  auto gm = std::make_unique<GraphModule>(make_container_module(), parse_graph(R"(graph():
    %x : [num_users=1] = placeholder[target=x]
    %relu : [num_users=1] = call_module[target=relu](args = (%x,), kwargs = {})
    %neg : [num_users=1] = call_function[target=operator.mul](args = (%relu, 2), kwargs = {})
    %add_ : [num_users=1] = call_method[target=add_](args = (%neg, 1), kwargs = {})
    return add_)"));
  gm->add_submodule("relu", torch::nn::ReLU(torch::nn::ReLUOptions(true)).ptr());
  Interpreter interpreter(*gm);
  EXPECT_TRUE(interpreter.changes_in_place_from(0));
  EXPECT_TRUE(interpreter.changes_in_place_from(3));
  EXPECT_FALSE(interpreter.changes_in_place_from(4));
  // ReLU(inplace=True) runs out of place in a recording: x stays as it was
  at::Tensor x = at::randn({4});
  at::Tensor copy = x.clone();
  std::vector<c10::IValue> values;
  interpreter.run_recording({x}, {true, true}, values);
  EXPECT_TRUE(at::equal(x, copy));
  EXPECT_TRUE(at::equal(values[1].toTensor(), at::relu(copy)));
}

}  // namespace
}  // namespace qfx::ir
