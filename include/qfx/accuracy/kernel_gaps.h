#pragma once
/// \file
/// Kernel faults: how far each op of a lowered model is from what its
/// reference model computes on the *same* quantized inputs. The reference
/// model (convert_to_reference_fx) computes each quantized op as dequantize,
/// the float op, quantize; the lowered model (convert_fx) runs LibTorch's
/// quantized kernel instead. Both quantize the op's output with the same
/// qparams, so a correct kernel differs from the reference by its rounding
/// only (at most one step); a gap beyond that is the kernel's (or the
/// lowering's) fault, not the op's sensitivity to quantization.
///
/// The reference model runs teacher-forced: each of its quantize nodes, once
/// computed from the lowered model's values, is compared with the lowered
/// model's value at that point and then replaced by it, so every op sees the
/// inputs its lowered form saw, and errors do not accumulate. An op whose
/// output step is below 2^-20 (its observer saw rounding noise, as a
/// normalization of constant channels gives) is not measured.
///
/// \code
///   auto reference = calibrated.deep_copy();  convert_to_reference_fx(*reference, backend);
///   auto lowered = calibrated.deep_copy();    convert_fx(*lowered, backend);
///   for (const KernelGap& gap : kernel_gaps(*reference, *lowered, batches))
///     if (gap.fault()) std::cout << gap.node << ": " << gap.steps << " steps\n";
/// \endcode

#include "qfx/ir/graph_module.h"

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <string>
#include <vector>

namespace qfx {

/// One quantized op's gap.
struct KernelGap {
  std::string node;    ///< the reference model's op node (whose output a quantize node reads)
  std::string target;  ///< its FX target
  int64_t steps = 0;   ///< the largest difference from the reference, in quantization steps
  double off = 0;      ///< the share of output elements more than one step off

  /// More than rounding: more than one step off.
  bool fault() const { return steps > 1; }
};

/// The gap of every op of `lowered` that has a counterpart in `reference`
/// (the node that took over a quantize node's value: same name as the
/// quantize node or as the op it reads), in graph order, over `batches` (each
/// the model's positional inputs).
std::vector<KernelGap> kernel_gaps(const ir::GraphModule& reference, const ir::GraphModule& lowered,
                                   const std::vector<std::vector<c10::IValue>>& batches);

}  // namespace qfx
