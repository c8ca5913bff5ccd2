// QAT fine-tuning of a prepared classifier: the library's qfx::train on the
// training data read with the CLI's progress line and batch-naming errors.

#include "qat_training.h"

#include "data_args.h"

#include "qfx/pipeline.h"

#include <iostream>
#include <optional>

namespace qfx::cli {

void train_qat(ir::GraphModule& gm, const TrainArgs& args, io::DataOptions options, bool quiet,
               dist::ProcessGroup* group) {
  TORCH_CHECK(args.epochs > 0, "--epochs must be positive, got ", args.epochs);
  TORCH_CHECK(args.lr > 0, "--lr must be positive, got ", args.lr);
  const int64_t world = group != nullptr ? group->world_size() : 1;
  const int64_t rank = group != nullptr ? group->rank() : 0;
  const std::optional<uint64_t> seed = options.seed;
  LabelledBatches data = [&](int64_t epoch, const std::function<void(const LabelledBatch&)>& each) {
    if (seed) options.seed = *seed + static_cast<uint64_t>(epoch);
    auto source = io::open_data(args.data, options);
    const int64_t steps = source->num_batches() / world;  // every rank takes as many steps
    TORCH_CHECK(steps > 0, "training data '", args.data, "': ", source->num_batches(), " batches for ", world,
                " ranks");
    int64_t step = 0;
    for_each_batch(
        *source, "training data '" + args.data + "'", "train epoch " + std::to_string(epoch + 1), quiet,
        [&](const io::Batch& batch, int64_t) {
          each({batch.inputs, batch.labels});
          ++step;
        },
        [&](int64_t index) { return step < steps && dist::owns_batch(index, rank, world); });
  };
  TrainOptions train_options{args.epochs, args.lr};
  train(gm, data, train_options, group, [&](int64_t epoch, double loss) {
    if (!quiet) std::cerr << "train epoch " << epoch + 1 << ": mean loss " << loss << "\n";
  });
}

}  // namespace qfx::cli
