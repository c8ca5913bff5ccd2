#pragma once
// The Fashion-MNIST classifiers qfx trains (train.cpp): built as qfx
// GraphModules from LibTorch modules, trained with LibTorch autograd.

#include "qfx/ir/graph_module.h"

#include <memory>
#include <string>

namespace fashion_mnist {

/// "cnn": the demo's model (conv-relu-pool twice, two linear layers).
/// "mobilenet": a MobileNetV2-style network: a conv stem, five inverted
/// residual blocks (1x1 expansion, 3x3 depthwise, linear 1x1 projection,
/// batch norm after each conv, residual adds where shapes allow), a 1x1 head,
/// global average pooling and a linear classifier. ReLU instead of ReLU6, so
/// cross-layer equalization applies (ReLU commutes with positive scales).
/// "mobilenet_relu6": the same with ReLU6, as MobileNetV2 has it.
/// "vit": a small vision transformer: 4x4 patches of the 28x28 image as 49
/// tokens of 64 (a conv), their positions added by a depthwise 3x3 conv over
/// the patch grid, four pre-norm encoder blocks (4-head self-attention from
/// Linear, matmul and softmax nodes; a GELU MLP of 128), a final LayerNorm,
/// the tokens' mean and a linear classifier.
/// c10::Error for another name.
std::unique_ptr<qfx::ir::GraphModule> make_model(const std::string& name);

}  // namespace fashion_mnist
