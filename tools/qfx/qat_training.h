#pragma once
// QAT fine-tuning for `qfx quantize --qconfig qat --train DATA`: the prepared
// classifier trained with cross-entropy against the data's labels (Adam),
// fake quantization and observers running, batch by batch.

#include "qfx/dist/distributed.h"
#include "qfx/io/data_source.h"
#include "qfx/ir/graph_module.h"

#include <string>

namespace qfx::cli {

struct TrainArgs {
  std::string data;  ///< labelled data (IDX with labels, image folder)
  int64_t epochs = 1;
  double lr = 1e-5;
};

/// Trains `gm` (prepared by prepare_qat_fx) in training mode and leaves it in
/// eval mode; each epoch reads `data` in the order of `options.seed` + epoch
/// (file order without a seed). With a `group` each rank trains on every
/// world_size-th batch, as many steps as every rank has, with gradients
/// averaged over the ranks and fake-quantize statistics synchronised after
/// each step (dist::average_gradients, dist::sync_fake_quantize); batch-norm
/// running statistics stay each rank's own, as under DistributedDataParallel
/// without SyncBatchNorm (rank 0's are written). c10::Error naming the batch
/// when the data has no labels or the loss stops being finite.
void train_qat(ir::GraphModule& gm, const TrainArgs& args, io::DataOptions options, bool quiet,
               dist::ProcessGroup* group = nullptr);

}  // namespace qfx::cli
