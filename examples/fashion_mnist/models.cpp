// The classifiers of models.h, node by node.

#include "models.h"

#include <torch/torch.h>

#include <cmath>

namespace fashion_mnist {
namespace {

using qfx::ir::Node;

std::unique_ptr<qfx::ir::GraphModule> make_cnn() {
  auto gm = std::make_unique<qfx::ir::GraphModule>();
  gm->add_submodule("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 16, 3).padding(1)).ptr());
  gm->add_submodule("relu1", torch::nn::ReLU().ptr());
  gm->add_submodule("pool1", torch::nn::MaxPool2d(2).ptr());
  gm->add_submodule("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 32, 3).padding(1)).ptr());
  gm->add_submodule("relu2", torch::nn::ReLU().ptr());
  gm->add_submodule("pool2", torch::nn::MaxPool2d(2).ptr());
  gm->add_submodule("fc1", torch::nn::Linear(32 * 7 * 7, 128).ptr());
  gm->add_submodule("relu3", torch::nn::ReLU().ptr());
  gm->add_submodule("fc2", torch::nn::Linear(128, 10).ptr());
  qfx::ir::Graph& g = gm->graph();
  Node* x = g.placeholder("x");
  for (const char* m : {"conv1", "relu1", "pool1", "conv2", "relu2", "pool2"}) x = g.call_module(m, {x});
  x = g.call_function("torch.flatten", {x, int64_t{1}});
  for (const char* m : {"fc1", "relu3", "fc2"}) x = g.call_module(m, {x});
  g.output(x);
  return gm;
}

/// Adds modules and nodes under dotted names ("blocks.0.conv1").
class Builder {
 public:
  /// `relu6`: the activations are ReLU6, as MobileNetV2's, else ReLU.
  explicit Builder(qfx::ir::GraphModule& gm, bool relu6 = false) : gm_(gm), relu6_(relu6) {}

  /// conv (no bias) -> batch norm [-> relu or relu6]
  Node* conv_bn(Node* x, const std::string& name, int64_t in, int64_t out, int64_t kernel, int64_t stride,
                int64_t groups, bool relu) {
    auto options = torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).groups(groups);
    x = module(x, name + ".conv", torch::nn::Conv2d(options.bias(false)).ptr());
    x = module(x, name + ".bn", torch::nn::BatchNorm2d(out).ptr());
    if (!relu) return x;
    return relu6_ ? module(x, name + ".relu", torch::nn::ReLU6().ptr())
                  : module(x, name + ".relu", torch::nn::ReLU().ptr());
  }

  /// MobileNetV2's inverted residual block.
  Node* inverted_residual(Node* x, const std::string& name, int64_t in, int64_t out, int64_t expand, int64_t stride) {
    Node* input = x;
    const int64_t hidden = in * expand;
    if (expand != 1) x = conv_bn(x, name + ".expand", in, hidden, 1, 1, 1, true);
    x = conv_bn(x, name + ".depthwise", hidden, hidden, 3, stride, hidden, true);
    x = conv_bn(x, name + ".project", hidden, out, 1, 1, 1, false);
    if (stride == 1 && in == out) x = gm_.graph().call_function("operator.add", {x, input});
    return x;
  }

  Node* module(Node* x, const std::string& path, std::shared_ptr<torch::nn::Module> m) {
    gm_.add_submodule(path, std::move(m));
    return gm_.graph().call_module(path, {x});
  }

 private:
  qfx::ir::GraphModule& gm_;
  bool relu6_;
};

std::unique_ptr<qfx::ir::GraphModule> make_mobilenet(bool relu6) {
  auto gm = std::make_unique<qfx::ir::GraphModule>();
  Builder b(*gm, relu6);
  qfx::ir::Graph& g = gm->graph();
  Node* x = b.conv_bn(g.placeholder("x"), "stem", 1, 16, 3, 1, 1, true);
  struct Block {
    int64_t in, out, expand, stride;
  };
  const Block blocks[] = {{16, 16, 1, 1}, {16, 24, 4, 2}, {24, 24, 4, 1}, {24, 32, 4, 2}, {32, 32, 4, 1}};
  int index = 0;
  for (const Block& block : blocks) {
    x = b.inverted_residual(x, "blocks." + std::to_string(index++), block.in, block.out, block.expand, block.stride);
  }
  x = b.conv_bn(x, "head", 32, 128, 1, 1, 1, true);
  x = b.module(x, "pool", torch::nn::AdaptiveAvgPool2d(1).ptr());
  x = g.call_function("torch.flatten", {x, int64_t{1}});
  x = b.module(x, "classifier", torch::nn::Linear(128, 10).ptr());
  g.output(x);
  return gm;
}

/// Builds the small vision transformer's nodes.
class VitBuilder {
 public:
  static constexpr int64_t kDim = 64, kHeads = 4, kTokens = 49, kHidden = 128;

  explicit VitBuilder(qfx::ir::GraphModule& gm) : gm_(gm), g_(gm.graph()), b_(gm) {}

  Node* method(const char* name, std::vector<qfx::ir::Argument> args) { return g_.call_method(name, std::move(args)); }

  /// [B, tokens, dim] -> [B, heads, tokens, dim / heads]
  Node* split_heads(Node* x) {
    x = method("reshape", {x, ints({-1, kTokens, kHeads, kDim / kHeads})});
    return method("transpose", {x, int64_t{1}, int64_t{2}});
  }

  /// Pre-norm encoder block: x + attention(ln1(x)), then x + mlp(ln2(x)).
  Node* block(Node* x, const std::string& name) {
    Node* h = b_.module(x, name + ".ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({kDim})).ptr());
    Node* q = split_heads(b_.module(h, name + ".q", torch::nn::Linear(kDim, kDim).ptr()));
    Node* k = split_heads(b_.module(h, name + ".k", torch::nn::Linear(kDim, kDim).ptr()));
    Node* v = split_heads(b_.module(h, name + ".v", torch::nn::Linear(kDim, kDim).ptr()));
    Node* scores = g_.call_function("torch.matmul", {q, method("transpose", {k, int64_t{-2}, int64_t{-1}})});
    scores = g_.call_function("operator.mul", {scores, 1.0 / std::sqrt(static_cast<double>(kDim / kHeads))});
    Node* attention = g_.call_function("torch.matmul", {method("softmax", {scores, int64_t{-1}}), v});
    attention =
        method("reshape", {method("transpose", {attention, int64_t{1}, int64_t{2}}), ints({-1, kTokens, kDim})});
    x = g_.call_function("operator.add", {x, b_.module(attention, name + ".out", torch::nn::Linear(kDim, kDim).ptr())});
    h = b_.module(x, name + ".ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({kDim})).ptr());
    h = b_.module(h, name + ".fc1", torch::nn::Linear(kDim, kHidden).ptr());
    h = b_.module(h, name + ".gelu", torch::nn::GELU().ptr());
    h = b_.module(h, name + ".fc2", torch::nn::Linear(kHidden, kDim).ptr());
    return g_.call_function("operator.add", {x, h});
  }

  Builder& modules() { return b_; }

 private:
  static qfx::ir::Argument ints(std::vector<int64_t> values) {
    qfx::ir::Argument::Items items;
    for (int64_t v : values) items.emplace_back(v);
    return qfx::ir::Argument::list(std::move(items));
  }

  qfx::ir::GraphModule& gm_;
  qfx::ir::Graph& g_;
  Builder b_;
};

std::unique_ptr<qfx::ir::GraphModule> make_vit() {
  auto gm = std::make_unique<qfx::ir::GraphModule>();
  VitBuilder vit(*gm);
  Builder& b = vit.modules();
  qfx::ir::Graph& g = gm->graph();
  constexpr int64_t kDim = VitBuilder::kDim;
  // 4x4 patches of the 28x28 image: 49 tokens; a depthwise 3x3 conv over the patch grid adds their positions
  Node* patches =
      b.module(g.placeholder("x"), "patch", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, kDim, 4).stride(4)).ptr());
  Node* position = b.module(patches, "position",
                            torch::nn::Conv2d(torch::nn::Conv2dOptions(kDim, kDim, 3).padding(1).groups(kDim)).ptr());
  Node* x = g.call_function("operator.add", {patches, position});
  x = vit.method("transpose", {vit.method("flatten", {x, int64_t{2}}), int64_t{1}, int64_t{2}});
  for (int i = 0; i < 4; ++i) x = vit.block(x, "blocks." + std::to_string(i));
  x = b.module(x, "norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({kDim})).ptr());
  x = vit.method("mean", {x, int64_t{1}});
  x = b.module(x, "head", torch::nn::Linear(kDim, 10).ptr());
  g.output(x);
  return gm;
}

}  // namespace

std::unique_ptr<qfx::ir::GraphModule> make_model(const std::string& name) {
  std::unique_ptr<qfx::ir::GraphModule> gm;
  if (name == "cnn") gm = make_cnn();
  if (name == "mobilenet") gm = make_mobilenet(false);
  if (name == "mobilenet_relu6") gm = make_mobilenet(true);
  if (name == "vit") gm = make_vit();
  TORCH_CHECK(gm != nullptr, "unknown model '", name, "' (models: cnn, mobilenet, mobilenet_relu6, vit)");
  gm->lint();
  return gm;
}

}  // namespace fashion_mnist
