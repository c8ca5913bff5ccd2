#pragma once
/// \file
/// The names of the ops qfx's passes and import/export code create or look
/// for, each written once: FX's call_function targets (`torch.quantize_per_tensor`,
/// `operator.getitem`), call_method names (`dequantize`) and module types
/// (`torch.nn.ReLU`). Tables of PyTorch's own lists (lowering maps, the
/// op catalog, backend configs) keep PyTorch's spelling as data.
///
/// \code
///   graph.call_function(ir::op::kQuantizePerTensor, {x, scale, zero_point, ir::Argument(c10::kQUInt8)});
///   node.op() == ir::Opcode::kCallMethod && node.target() == ir::op::kDequantize;
/// \endcode

namespace qfx::ir::op {

// call_function targets
inline constexpr const char* kQuantizePerTensor = "torch.quantize_per_tensor";
inline constexpr const char* kQuantizePerChannel = "torch.quantize_per_channel";
inline constexpr const char* kQuantizePerTensorDynamic = "torch.quantize_per_tensor_dynamic";
inline constexpr const char* kGetitem = "operator.getitem";
inline constexpr const char* kGetattr = "getattr";
inline constexpr const char* kFunctionalRelu = "torch.nn.functional.relu";
inline constexpr const char* kTorchRelu = "torch.relu";
inline constexpr const char* kFunctionalLinear = "torch.nn.functional.linear";
/// The prefix of the functional convolutions (`torch.nn.functional.conv2d`).
inline constexpr const char* kFunctionalConvPrefix = "torch.nn.functional.conv";

// call_method names
inline constexpr const char* kDequantize = "dequantize";
inline constexpr const char* kTo = "to";

// module types
inline constexpr const char* kReLU = "torch.nn.ReLU";

}  // namespace qfx::ir::op
