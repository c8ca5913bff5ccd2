// Trains the demo's Fashion-MNIST classifier with qfx and LibTorch autograd,
// then exports it as TorchScript (the file `make demo` quantizes).
//
//   build/bin/fashion_mnist_train [DATA_DIR] [OUT.pt] [EPOCHS]
//   (defaults: /usr/share/datasets/fashion-mnist, examples/fashion_mnist/fashion_cnn.pt, 7)
//
// The model is built as a qfx GraphModule (conv-relu-pool twice, then two
// linear layers), trained with Adam on the 60,000 training images in a
// seeded order, and evaluated on the 10,000 test images after each epoch.

#include "qfx/io/data_source.h"
#include "qfx/io/torchscript_export.h"
#include "qfx/ir/graph_module.h"
#include "qfx/ir/interpreter.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

namespace {

constexpr double kMean = 0.2860, kStd = 0.3530;  // Fashion-MNIST training pixels

std::unique_ptr<qfx::ir::GraphModule> make_model() {
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
  qfx::ir::Node* x = g.placeholder("x");
  for (const char* m : {"conv1", "relu1", "pool1", "conv2", "relu2", "pool2"}) x = g.call_module(m, {x});
  x = g.call_function("torch.flatten", {x, int64_t{1}});
  for (const char* m : {"fc1", "relu3", "fc2"}) x = g.call_module(m, {x});
  g.output(x);
  gm->lint();
  return gm;
}

qfx::io::DataOptions data_options(int64_t batch_size, std::optional<uint64_t> seed) {
  qfx::io::DataOptions options;
  options.batch_size = batch_size;
  options.mean = {kMean};
  options.std = {kStd};
  options.seed = seed;
  return options;
}

double accuracy(qfx::ir::GraphModule& gm, const std::string& images) {
  torch::NoGradGuard no_grad;
  gm.root().eval();
  qfx::ir::Interpreter interpreter(gm);
  auto data = qfx::io::open_data(images, data_options(500, std::nullopt));
  int64_t correct = 0, total = 0;
  while (auto batch = data->next()) {
    at::Tensor logits = interpreter.run(batch->inputs).toTensor();
    correct += logits.argmax(1).eq(batch->labels).sum().item<int64_t>();
    total += batch->labels.size(0);
  }
  return 100.0 * correct / total;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  std::string out = argc > 2 ? argv[2] : "examples/fashion_mnist/fashion_cnn.pt";
  int epochs = argc > 3 ? std::stoi(argv[3]) : 7;
  try {
    torch::manual_seed(0);
    auto gm = make_model();
    torch::optim::Adam adam(gm->root().parameters(), torch::optim::AdamOptions(1e-3));
    for (int epoch = 0; epoch < epochs; ++epoch) {
      auto start = std::chrono::steady_clock::now();
      gm->root().train();
      qfx::ir::Interpreter interpreter(*gm);
      auto data = qfx::io::open_data(dir + "/train-images-idx3-ubyte.gz", data_options(64, epoch));
      double loss_sum = 0;
      int64_t batches = 0;
      while (auto batch = data->next()) {
        adam.zero_grad();
        at::Tensor loss = torch::cross_entropy_loss(interpreter.run(batch->inputs).toTensor(), batch->labels);
        loss.backward();
        adam.step();
        loss_sum += loss.item<double>();
        ++batches;
      }
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("epoch %d: loss %.4f, test top-1 %.2f%% (%.0f s)\n", epoch + 1, loss_sum / batches,
                  accuracy(*gm, dir + "/t10k-images-idx3-ubyte.gz"), seconds);
    }
    gm->root().eval();
    qfx::io::export_torchscript(*gm, out);
    std::printf("wrote %s\n", out.c_str());
  } catch (const c10::Error& e) {
    std::cerr << "fashion_mnist_train: error: " << e.what_without_backtrace() << "\n";
    return 1;
  }
  return 0;
}
