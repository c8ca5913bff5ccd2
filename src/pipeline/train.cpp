// Quantization-aware training of a prepared classifier (qfx/pipeline.h).

#include "qfx/pipeline.h"

#include "qfx/ir/interpreter.h"

#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>

#include <cmath>
#include <optional>

namespace qfx {
namespace {

/// One training step on `batch`; its loss.
double step(ir::GraphModule& gm, ir::Interpreter& interpreter, torch::optim::Optimizer& optimizer,
            const LabelledBatch& batch, int64_t epoch, dist::ProcessGroup* group) {
  TORCH_CHECK(batch.labels.defined(), "no labels (training needs labelled data)");
  optimizer.zero_grad();
  at::Tensor logits = interpreter.run(batch.inputs).toTensor();
  at::Tensor loss = torch::nn::functional::cross_entropy(logits, batch.labels);
  double value = loss.item<double>();
  TORCH_CHECK(std::isfinite(value), "epoch ", epoch + 1, ": the loss is ", value, " (lower the learning rate)");
  loss.backward();
  if (group != nullptr) dist::average_gradients(optimizer.param_groups()[0].params(), *group);
  optimizer.step();
  if (group != nullptr) dist::sync_fake_quantize(gm.root(), *group);
  return value;
}

}  // namespace

void train(ir::GraphModule& prepared, const LabelledBatches& data, const TrainOptions& options,
           dist::ProcessGroup* group, const std::function<void(int64_t epoch, double loss)>& on_epoch) {
  TORCH_CHECK(options.epochs > 0, "training: epochs must be positive, got ", options.epochs);
  TORCH_CHECK(options.lr > 0, "training: the learning rate must be positive, got ", options.lr);
  auto parameters = prepared.root().parameters();
  TORCH_CHECK(!parameters.empty(), "training: the prepared model has no parameters to train");
  torch::optim::Adam optimizer(parameters, torch::optim::AdamOptions(options.lr));
  ir::Interpreter interpreter(prepared);
  prepared.root().train(true);
  for (int64_t epoch = 0; epoch < options.epochs; ++epoch) {
    double loss_sum = 0;
    int64_t steps = 0;
    data(epoch, [&](const LabelledBatch& batch) {
      loss_sum += step(prepared, interpreter, optimizer, batch, epoch, group);
      ++steps;
    });
    TORCH_CHECK(steps > 0, "training: epoch ", epoch + 1, " has no batches");
    if (on_epoch) on_epoch(epoch, loss_sum / static_cast<double>(steps));
  }
  prepared.root().train(false);
}

LabelledBatches labelled_data_batches(const std::string& path, io::DataOptions options, int64_t rank, int64_t world) {
  return [path, options, rank, world](int64_t epoch, const std::function<void(const LabelledBatch&)>& each) {
    io::DataOptions epoch_options = options;
    if (options.seed) epoch_options.seed = *options.seed + static_cast<uint64_t>(epoch);
    auto source = io::open_data(path, epoch_options);
    const int64_t steps = source->num_batches() / world;  // every rank takes as many steps
    TORCH_CHECK(steps > 0, "training data '", path, "': ", source->num_batches(), " batches for ", world, " ranks");
    int64_t taken = 0;
    for (int64_t index = 0; taken < steps; ++index) {
      if (!dist::owns_batch(index, rank, world)) {
        if (!source->skip()) break;
        continue;
      }
      std::optional<io::Batch> batch = source->next();
      if (!batch) break;
      each({batch->inputs, batch->labels});
      ++taken;
    }
  };
}

}  // namespace qfx
