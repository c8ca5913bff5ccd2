// A pointwise convolution's weight prepacked for quantized::linear, for the
// exported TorchScript on the onednn engine.
//
// LibTorch 1.13's onednn convolution caches one primitive per packed weight,
// made for the input shape and thread count of its first run, and reorders
// the weight in place into that primitive's layout. A run with another shape
// or thread count takes the uncached path, which reorders the weight from
// that layout into its own. The 1x1 kernel (oneDNN's brgconv_1x1) picks its
// output-channel blocking by batch and thread count, and oneDNN cannot
// reorder one such blocking into another ("could not create a primitive
// descriptor for a reorder primitive"): the model dies when its host changes
// its thread count or batch size. TorchScript cannot read the thread count,
// so an exported forward cannot keep one packing per thread count. LibTorch's
// onednn linear caches no primitive and computes the same integers (u8 x s8
// products summed in int32, requantized alike), so a pointwise convolution is
// exported as one over the channel dimension:
//   conv(x, w[O, I, 1, 1]) == linear(x.permute(0, 2, 3, 1), w[O, I]).permute(0, 3, 1, 2)

#include "qfx/nn/quantized.h"

#include "quantized_kinds.h"

#include <ATen/Context.h>
#include <ATen/core/Tensor.h>

namespace qfx::nn {
namespace {

/// "2d" / "3d" of a convolution's packed params (a Conv1d's are 2d), "" otherwise.
std::string packed_dims(const c10::IValue& packed) {
  if (!packed.isCustomClass()) return "";
  const std::string type = packed.type()->str();
  for (const char* dims : {"2d", "3d"}) {
    if (type == std::string("__torch__.torch.classes.quantized.Conv") + dims + "PackedParamsBase") return dims;
  }
  return "";
}

bool all_equal(const c10::IValue& list, int64_t value) {
  for (int64_t v : list.toIntVector()) {
    if (v != value) return false;
  }
  return true;
}

}  // namespace

std::optional<c10::IValue> pointwise_linear_weight(const c10::IValue& conv_packed) {
  // qnnpack keeps no primitive cache: its convolutions run on any shape
  if (at::globalContext().qEngine() != at::QEngine::ONEDNN) return std::nullopt;
  const std::string dims = packed_dims(conv_packed);
  if (dims.empty()) return std::nullopt;
  const std::string prefix = "quantized::conv" + dims + "_";
  auto ask = [&](const std::string& what) { return detail::call_op((prefix + what).c_str(), "", {conv_packed}); };
  if (ask("transpose").toInt() != 0 || ask("groups").toInt() != 1) return std::nullopt;
  if (!all_equal(ask("stride"), 1) || !all_equal(ask("padding"), 0)) return std::nullopt;
  std::vector<c10::IValue> unpacked = detail::call_op_returning_all((prefix + "unpack").c_str(), "", {conv_packed});
  const at::Tensor weight = unpacked.at(0).toTensor();
  for (int64_t d = 2; d < weight.dim(); ++d) {
    if (weight.size(d) != 1) return std::nullopt;
  }
  at::Tensor matrix = weight.reshape({weight.size(0), weight.size(1)});
  return detail::call_op("quantized::linear_prepack", "", {matrix, unpacked.at(1)});
}

}  // namespace qfx::nn
