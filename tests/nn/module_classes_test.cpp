// The module classes of nn/: one C++ class per PyTorch class for the
// reference, QAT and weighted quantized modules (static factories, the
// TORCH_MODULE holder, the generic factories agree with the typed ones);
// GraphModule::deep_copy and their clone(): a copy computes what the
// original does, shares no tensor with it, keeps the sharing inside the tree
// (a module at two paths, a weight two modules hold), and a module that
// cannot be copied is named by its path.

#include "support/fixtures.h"

#include "qfx/ir/graph_module.h"
#include "qfx/ir/interpreter.h"
#include "qfx/ir/module_registry.h"
#include "qfx/ir/parser.h"
#include "qfx/nn/intrinsic.h"
#include "qfx/nn/qat.h"
#include "qfx/nn/quantized.h"
#include "qfx/nn/reference.h"
#include "qfx/quant/qconfig.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

namespace qfx::nn {
namespace {

WeightQParams qparams_for(const at::Tensor& weight) {
  auto observer = quant::get_default_qconfig("onednn").weight.make();
  observer->forward(weight);
  return weight_qparams_of(*observer);
}

TEST(DeepCopy, KeepsSharingInsideTheTree) {
  torch::NoGradGuard no_grad;
  auto fc = torch::nn::Linear(4, 3).ptr();
  auto relu = torch::nn::ReLU().ptr();
  ir::GraphModule gm;
  gm.add_submodule("fc", fc);
  gm.add_submodule("ref", ReferenceLinearImpl::from_float(fc, qparams_for(fc->weight)));  // holds fc's weight
  gm.add_submodule("block.act", relu);
  gm.add_submodule("block.again", relu);  // one module at two paths
  auto copy = gm.deep_copy();

  EXPECT_EQ(copy->get_submodule("block.act"), copy->get_submodule("block.again"));
  EXPECT_NE(copy->get_submodule("block.act"), relu);
  at::Tensor fc_weight = copy->get_attr("fc.weight").toTensor();
  at::Tensor ref_weight = copy->get_attr("ref.weight").toTensor();
  EXPECT_EQ(fc_weight.data_ptr(), ref_weight.data_ptr()) << "the weight both modules hold stays one";
  EXPECT_FALSE(test::shares_storage(gm.root(), copy->root()));
  fc_weight.fill_(0.5);  // the copy's weight, seen by the copy's reference module only
  EXPECT_TRUE(at::equal(ref_weight, at::full_like(ref_weight, 0.5)));
  EXPECT_FALSE(at::equal(fc->weight, at::full_like(fc->weight, 0.5)));
}

TEST(DeepCopy, CopiesComputeAsTheOriginalAndStayApart) {
  torch::NoGradGuard no_grad;
  at::manual_seed(0);
  auto linear = torch::nn::Linear(8, 4).ptr();
  auto ref = reference_from_float(linear, qparams_for(linear->weight));
  auto fused = make_fused_module(FusedKind::kLinearReLU, {linear, torch::nn::ReLU().ptr()});
  std::dynamic_pointer_cast<FusedModuleImpl>(fused)->set_module(0, ref);  // as convert leaves it
  auto quantized = quantized_from_reference("torch.ao.nn.intrinsic.quantized.LinearReLU", *fused, {{0.05, 3}});
  at::Tensor x = at::quantize_per_tensor(at::randn({2, 8}), 0.1, 128, at::kQUInt8);

  for (const std::shared_ptr<torch::nn::Module>& original :
       std::vector<std::shared_ptr<torch::nn::Module>>{fused, quantized}) {
    auto copy = original->clone();
    EXPECT_EQ(ir::module_type_name(*copy), ir::module_type_name(*original));
    EXPECT_EQ(ir::module_repr(*copy), ir::module_repr(*original));
    EXPECT_FALSE(test::shares_storage(*original, *copy));
    const ir::ModuleKind* kind = ir::ModuleRegistry::instance().find(*original);
    std::vector<c10::IValue> in{original == quantized ? x : x.dequantize()};
    at::Tensor expected = kind->forward(*original, in).toTensor();
    at::Tensor copied = kind->forward(*copy, in).toTensor();
    EXPECT_TRUE(at::equal(copied.is_quantized() ? copied.int_repr() : copied,
                          expected.is_quantized() ? expected.int_repr() : expected));
  }
  auto copy = quantized->clone();
  EXPECT_NE(&dynamic_cast<QuantizedModuleImpl&>(*copy).attribute("_packed_params").toObjectRef(),
            &quantized->attribute("_packed_params").toObjectRef())
      << "packed weights rebuilt, not shared";
}

TEST(ReferenceModules, OneClassPerFloatClass) {
  torch::NoGradGuard no_grad;
  auto conv = torch::nn::Conv2d(torch::nn::Conv2dOptions(2, 3, 3)).ptr();
  ReferenceConv2d ref(conv, qparams_for(conv->weight));  // the LibTorch holder idiom
  EXPECT_EQ(ir::module_type_name(*ref.ptr()), "torch.ao.nn.quantized.reference.Conv2d");
  EXPECT_EQ(ref->float_module(), conv);
  EXPECT_TRUE(ref->named_parameters(false)["weight"].is_same(conv->weight)) << "from_float shares the weight";
  // The generic entry point picks the same class from the float module's type.
  auto by_type = reference_from_float(conv, qparams_for(conv->weight));
  EXPECT_NE(std::dynamic_pointer_cast<ReferenceConv2dImpl>(by_type), nullptr);
  auto copy = std::dynamic_pointer_cast<ReferenceConv2dImpl>(ref->clone());
  ASSERT_NE(copy, nullptr);
  at::Tensor x = at::randn({1, 2, 5, 5});
  EXPECT_TRUE(at::equal(copy->forward(x), ref->forward(x)));
  EXPECT_THROW(reference_from_float(torch::nn::ReLU().ptr(), {}), c10::Error);
}

TEST(QatModules, OneClassPerFloatClassAndFusion) {
  auto conv = torch::nn::Conv2d(torch::nn::Conv2dOptions(2, 3, 3)).ptr();
  auto fused =
      make_fused_module(FusedKind::kConvBnReLU2d, {conv, torch::nn::BatchNorm2d(3).ptr(), torch::nn::ReLU().ptr()});
  quant::QConfig qconfig = quant::get_default_qat_qconfig("onednn");
  std::shared_ptr<QatConvBnReLU2dImpl> qat = QatConvBnReLU2dImpl::from_float(fused, qconfig);
  EXPECT_EQ(ir::module_type_name(*qat), "torch.ao.nn.intrinsic.qat.ConvBnReLU2d");
  EXPECT_TRUE(qat->named_parameters(false)["weight"].is_same(conv->weight)) << "from_float shares the weight";
  auto by_name = qat_from_float("torch.ao.nn.intrinsic.qat.ConvBnReLU2d", fused, qconfig);
  EXPECT_NE(std::dynamic_pointer_cast<QatConvBnReLU2dImpl>(by_name), nullptr);
  EXPECT_NE(std::dynamic_pointer_cast<QatConvBnReLU2dImpl>(qat->clone()), nullptr);
  EXPECT_THROW(QatConv2dImpl::from_float(fused, qconfig), c10::Error);  // a fused module is not a Conv2d
}

TEST(QuantizedModules, OneClassPerWeightedClass) {
  torch::NoGradGuard no_grad;
  at::manual_seed(1);
  auto linear = torch::nn::Linear(8, 4).ptr();
  quant::QConfig qconfig = quant::get_default_qconfig("onednn");
  auto ref = ReferenceLinearImpl::from_float(linear, qparams_for(linear->weight));
  std::shared_ptr<QuantizedLinearImpl> q = QuantizedLinearImpl::from_reference(*ref, OutputQParams{0.05, 3});
  EXPECT_EQ(ir::module_type_name(*q), "torch.ao.nn.quantized.Linear");
  QuantizedLinear holder(q);  // the LibTorch holder idiom
  EXPECT_EQ(holder.ptr(), q);
  // Eager mode's from_float observes the weight as the reference module's qparams did.
  auto eager = QuantizedLinearImpl::from_float(linear, qconfig, OutputQParams{0.05, 3});
  at::Tensor x = at::quantize_per_tensor(at::randn({3, 8}), 0.1, 128, at::kQUInt8);
  EXPECT_TRUE(at::equal(eager->forward({x}).toTensor().int_repr(), q->forward({x}).toTensor().int_repr()));
  EXPECT_NE(std::dynamic_pointer_cast<QuantizedLinearImpl>(q->clone()), nullptr);
  auto dynamic =
      DynamicQuantizedLinearImpl::from_reference(*ReferenceLinearImpl::from_float(linear, qparams_for(linear->weight)));
  EXPECT_EQ(ir::module_type_name(*dynamic), "torch.ao.nn.quantized.dynamic.Linear");
  EXPECT_THROW(QuantizedConv2dImpl::from_reference(*ref, OutputQParams{}), c10::Error);  // a Linear is no Conv2d
}

struct Uncopyable : torch::nn::Module {};

TEST(DeepCopy, NamesTheModuleItCannotCopy) {
  ir::GraphModule gm;
  gm.add_submodule("features.custom", std::make_shared<Uncopyable>());
  try {
    gm.deep_copy();
    FAIL() << "copied a module without clone()";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot copy module 'features.custom'"), std::string::npos) << e.what();
  }
}

TEST(DeepCopy, CopiesGraphAndAttributes) {
  ir::GraphModule gm;
  gm.add_submodule("fc", torch::nn::Linear(2, 2).ptr());
  ir::Node* x = gm.graph().placeholder("x");
  gm.graph().output(gm.graph().call_module("fc", {x}));
  gm.set_attr("packed", c10::IValue(std::vector<int64_t>{1, 2}));
  gm.preserved_attributes()["kept"] = at::ones({2});
  gm.set_class_name("Net");
  auto copy = gm.deep_copy();
  EXPECT_EQ(copy->to_string(), gm.to_string());
  EXPECT_NE(&copy->graph(), &gm.graph());
  EXPECT_EQ(copy->get_attr("packed").toIntVector(), std::vector<int64_t>({1, 2}));
  at::Tensor kept = copy->preserved_attributes().at("kept").toTensor();
  EXPECT_NE(kept.data_ptr(), gm.preserved_attributes().at("kept").toTensor().data_ptr());
  at::Tensor in = at::randn({1, 2});
  EXPECT_TRUE(at::equal(ir::Interpreter(*copy).run({in}).toTensor(), ir::Interpreter(gm).run({in}).toTensor()));
}

}  // namespace
}  // namespace qfx::nn
