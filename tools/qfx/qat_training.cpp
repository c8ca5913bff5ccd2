// QAT fine-tuning of a prepared classifier.

#include "qat_training.h"

#include "data_args.h"

#include "qfx/ir/interpreter.h"

#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>

#include <cmath>
#include <iostream>
#include <optional>

namespace qfx::cli {
namespace {

/// One pass over the data (this rank's batches); the mean loss.
double train_epoch(ir::GraphModule& gm, torch::optim::Optimizer& optimizer, const TrainArgs& args,
                   const io::DataOptions& options, int64_t epoch, bool quiet, dist::ProcessGroup* group) {
  auto source = io::open_data(args.data, options);
  const int64_t world = group != nullptr ? group->world_size() : 1;
  const int64_t rank = group != nullptr ? group->rank() : 0;
  const int64_t steps = source->num_batches() / world;  // every rank takes as many steps
  TORCH_CHECK(steps > 0, "training data '", args.data, "': ", source->num_batches(), " batches for ", world, " ranks");
  ir::Interpreter interpreter(gm);
  double loss_sum = 0;
  int64_t step = 0;
  for_each_batch(
      *source, "training data '" + args.data + "'", "train epoch " + std::to_string(epoch + 1), quiet,
      [&](const io::Batch& batch, int64_t) {
        TORCH_CHECK(batch.labels.defined(), "no labels (training needs labelled data)");
        optimizer.zero_grad();
        at::Tensor logits = interpreter.run(batch.inputs).toTensor();
        at::Tensor loss = torch::nn::functional::cross_entropy(logits, batch.labels);
        double value = loss.item<double>();
        TORCH_CHECK(std::isfinite(value), "epoch ", epoch + 1, ": the loss is ", value, " (lower --lr)");
        loss.backward();
        if (group != nullptr) dist::average_gradients(optimizer.param_groups()[0].params(), *group);
        optimizer.step();
        if (group != nullptr) dist::sync_fake_quantize(gm.root(), *group);
        loss_sum += value;
        ++step;
      },
      [&](int64_t index) { return step < steps && dist::owns_batch(index, rank, world); });
  return loss_sum / static_cast<double>(steps);
}

}  // namespace

void train_qat(ir::GraphModule& gm, const TrainArgs& args, io::DataOptions options, bool quiet,
               dist::ProcessGroup* group) {
  TORCH_CHECK(args.epochs > 0, "--epochs must be positive, got ", args.epochs);
  TORCH_CHECK(args.lr > 0, "--lr must be positive, got ", args.lr);
  auto parameters = gm.root().parameters();
  TORCH_CHECK(!parameters.empty(), "--train: the prepared model has no parameters to train");
  torch::optim::Adam optimizer(parameters, torch::optim::AdamOptions(args.lr));
  std::optional<uint64_t> seed = options.seed;
  gm.root().train(true);
  for (int64_t epoch = 0; epoch < args.epochs; ++epoch) {
    if (seed) options.seed = *seed + static_cast<uint64_t>(epoch);
    double loss = train_epoch(gm, optimizer, args, options, epoch, quiet, group);
    if (!quiet) std::cerr << "train epoch " << epoch + 1 << ": mean loss " << loss << "\n";
  }
  gm.root().train(false);
}

}  // namespace qfx::cli
