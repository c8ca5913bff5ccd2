// Trains the demo's Fashion-MNIST classifier with qfx and LibTorch autograd,
// then exports it as TorchScript (the file `make demo` quantizes).
//
//   build/bin/fashion_mnist_train [DATA_DIR] [OUT.pt] [EPOCHS] [MODEL]
//   (defaults: /usr/share/datasets/fashion-mnist, examples/fashion_mnist/fashion_cnn.pt, 7, cnn)
//
// The model (models.h: cnn, mobilenet) is built as a qfx GraphModule,
// trained with Adam on the 60,000 training images in a seeded order, and
// evaluated on the 10,000 test images after each epoch.

#include "models.h"

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
  std::string model = argc > 4 ? argv[4] : "cnn";
  try {
    torch::manual_seed(0);
    auto gm = fashion_mnist::make_model(model);
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
