// The CLI's data options.

#include "data_args.h"

#include "progress.h"

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

namespace qfx::cli {

io::DataOptions DataArgs::resolved() const {
  io::DataOptions out = options;
  TORCH_CHECK(seed >= -1, "--seed must be a non-negative integer, got ", seed);
  if (seed >= 0) out.seed = static_cast<uint64_t>(seed);
  return out;
}

void check_finite(const io::Batch& batch, const std::string& what, int64_t index) {
  for (const c10::IValue& v : batch.inputs) {
    if (!v.isTensor() || !v.toTensor().is_floating_point()) continue;
    TORCH_CHECK(at::isfinite(v.toTensor()).all().item<bool>(), what, " batch ", index, " holds NaN or infinite values");
  }
}

namespace {

/// The cause in a torch::jit error message (its last line: `RuntimeError:
/// ...` after the TorchScript traceback).
std::string script_error_cause(std::string message) {
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  return message.substr(message.find_last_of('\n') + 1);
}

}  // namespace

int64_t for_each_batch(io::DataSource& source, const std::string& what, const std::string& label, bool quiet,
                       const std::function<void(const io::Batch&, int64_t)>& fn,
                       const std::function<bool(int64_t)>& wanted) {
  Progress progress(label, source.num_batches(), quiet);
  int64_t index = 0, items = 0, skipped = 0;
  while (true) {
    if (wanted && !wanted(index)) {
      if (!source.skip()) break;
      ++skipped;
      progress.update(++index, items);
      continue;
    }
    std::optional<io::Batch> batch = source.next();
    if (!batch) break;
    check_finite(*batch, what, index);
    try {
      fn(*batch, index);
    } catch (const c10::Error& e) {
      TORCH_CHECK(false, what, " batch ", index, ": ", e.what_without_backtrace());
    } catch (const std::runtime_error& e) {  // torch::jit's errors: the TorchScript traceback, then the cause
      TORCH_CHECK(false, what, " batch ", index, ": ", script_error_cause(e.what()));
    }
    items += batch->size();
    progress.update(++index, items);
  }
  progress.finish();
  TORCH_CHECK(index > 0, what, " holds no batches");
  TORCH_CHECK(items > 0 || skipped > 0, what, " holds no items (every batch is empty)");
  return index;
}

void for_each_calibration_batch(const std::string& path, const DataArgs& args, int64_t max_batches,
                                const std::string& label, bool quiet, const std::function<void(const io::Batch&)>& fn,
                                const std::function<bool(int64_t)>& wanted) {
  io::DataOptions options = args.resolved();
  options.max_batches = max_batches;
  std::unique_ptr<io::DataSource> source;
  try {
    source = io::open_data(path, options);
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, "calibration data: ", e.what_without_backtrace());
  }
  for_each_batch(
      *source, "calibration data '" + path + "'", label, quiet, [&](const io::Batch& batch, int64_t) { fn(batch); },
      wanted);
}

std::vector<LabelledBatch> load_batches(const std::string& path, const DataArgs& args, int64_t batch_size,
                                        int64_t max_batches, const std::string& what, bool quiet) {
  io::DataOptions options = args.options;  // file order: no seed
  options.batch_size = batch_size;
  options.max_batches = max_batches;
  std::unique_ptr<io::DataSource> source;
  try {
    source = io::open_data(path, options);
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, what, ": ", e.what_without_backtrace());
  }
  std::vector<LabelledBatch> batches;
  for_each_batch(*source, what + " '" + path + "'", "load", quiet, [&](const io::Batch& batch, int64_t) {
    batches.push_back({batch.inputs, batch.labels});
  });
  return batches;
}

void add_data_options(CLI::App& cmd, DataArgs& args, const std::string& batch_help) {
  cmd.add_option("--batch-size", args.options.batch_size, batch_help);
  cmd.add_option("--mean", args.options.mean, "per-channel mean subtracted after scaling pixels to [0, 1]")
      ->delimiter(',');
  cmd.add_option("--std", args.options.std, "per-channel std divided by after subtracting the mean")->delimiter(',');
  cmd.add_option("--seed", args.seed, "shuffle the items with this seed (default: file order)");
  cmd.add_option("--resize", args.options.resize_size, "image folders: shorter side after resizing (default: 256)");
  cmd.add_option("--crop", args.options.crop_size, "image folders: center crop size (default: 224)");
}

}  // namespace qfx::cli
